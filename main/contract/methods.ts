// Every method the host answers: its params schema and its result type. Main validates
// params with these schemas; the renderer imports the types for a typed client.
import { z } from 'zod';
import type { DeviceInfo } from './devices';
import { playgroundMethods, type PlaygroundResults } from './playground';
import { runMethods, type RunResults } from './run_methods';
import { snapshotMethods, type SnapshotResults } from './snapshot';

export const methods = {
  'app.info': { params: z.undefined().or(z.object({}).strict()) },
  'devices.list': { params: z.undefined().or(z.object({}).strict()) },
  ...playgroundMethods,
  ...runMethods,
  ...snapshotMethods,
} as const;

export interface AppInfo {
  version: string;
  cuda: boolean;
  transport: 'ipc' | 'websocket';
}

export interface MethodResults extends PlaygroundResults, RunResults, SnapshotResults {
  'app.info': AppInfo;
  'devices.list': DeviceInfo[];
}

export type MethodName = keyof typeof methods;
/** Params as a client sends them. */
export type MethodParams<M extends MethodName> = z.input<(typeof methods)[M]['params']>;
/** Params as a handler receives them: validated, defaults filled (a spec is complete). */
export type MethodInput<M extends MethodName> = z.output<(typeof methods)[M]['params']>;
