// The snapshot methods the screens call, typed by the contract.
import type { SnapGrid, SnapLargest, SnapMinCapacity, SnapStateAt, SnapSummary, SnapTimeline, SnapWhatIf } from '$contract/snapshot';
import { call, type Transport } from '../../transport/transport';

export const snapshotApi = {
  list: (t: Transport): Promise<SnapSummary[]> => call(t, 'snapshot.list'),
  close: (t: Transport, id: string) => call(t, 'snapshot.close', { id }),
  timeline: (t: Transport, id: string, device: number, maxPoints: number): Promise<SnapTimeline> =>
    call(t, 'snapshot.timeline', { id, device, maxPoints, maxAllocations: 120 }),
  stateAt: (t: Transport, id: string, device: number, eventIndex: number): Promise<SnapStateAt> =>
    call(t, 'snapshot.stateAt', { id, device, eventIndex }),
  largest: (t: Transport, id: string, device: number, top = 25): Promise<SnapLargest> => call(t, 'snapshot.largest', { id, device, top }),
  whatIf: (t: Transport, id: string, device: number, allocConf: string, capacity: string | null): Promise<SnapWhatIf> =>
    call(t, 'snapshot.whatIf', { id, device, allocConf, capacity }),
  grid: (t: Transport, id: string, device: number, settings: string[], capacities: (string | null)[]): Promise<SnapGrid> =>
    call(t, 'snapshot.grid', { id, device, settings, capacities }),
  minCapacity: (t: Transport, id: string, device: number, allocConf: string): Promise<SnapMinCapacity> =>
    call(t, 'snapshot.minCapacity', { id, device, allocConf }),
};
