// The Runs screen against a real host and run store (in-process transport, temp home):
// listing, search, rename and delete go through the host's methods.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import RunsPanel from '../../renderer/src/panels/RunsPanel.svelte';
import { createHost } from '../../main/host/create';
import { loadAddon } from '../../main/addon/load';
import { RunStore } from '../../main/store/store';
import { parseSpec } from '../../main/contract/spec';
import type { Host } from '../../main/host/host';
import type { Transport } from '../../renderer/src/transport/transport';
import type { EventMessage } from '../../main/contract';

let home: string;
let host: Host;
let transport: Transport;

beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-runs-panel-'));
  const store = await RunStore.open(home);
  for (const [name, batch] of [
    ['adam baseline', 256],
    ['big batch', 4096],
  ] as const) {
    const w = await store.create(parseSpec({ batch }), { name });
    await w.finish('cancelled', null);
  }
  host = createHost(loadAddon(), { home });
  transport = {
    kind: 'websocket',
    send: (m) => host.handle(m, 'websocket'),
    onEvent: (l) => {
      const f = (m: EventMessage) => l(m);
      host.events.on('event', f);
      return () => host.events.off('event', f);
    },
    onState: (l) => {
      l('open');
      return () => {};
    },
  };
});
afterAll(() => {
  host?.dispose();
  rmSync(home, { recursive: true, force: true });
});
afterEach(() => cleanup());

const rows = () => document.querySelectorAll('[data-testid="runs-table"] tbody tr');

describe('RunsPanel', () => {
  it('lists, searches, renames and deletes stored runs', async () => {
    render(RunsPanel, { props: { transport, onopen: vi.fn() } });
    await waitFor(() => expect(rows().length).toBe(2));

    await fireEvent.input(screen.getByTestId('runs-search'), { target: { value: '4096' } });
    await waitFor(() => expect(rows().length).toBe(1));
    expect(rows()[0].textContent).toContain('big batch');

    await fireEvent.click(screen.getByTestId('rename'));
    await fireEvent.input(screen.getByTestId('rename-input'), { target: { value: 'renamed run' } });
    await fireEvent.submit(screen.getByTestId('rename-input').closest('form')!);
    await waitFor(() => expect(rows()[0].textContent).toContain('renamed run'));
    const listed = (await host.handle({ id: 1, method: 'runs.list' }, 'websocket')) as { ok: true; result: { name: string }[] };
    expect(listed.result.map((r) => r.name)).toContain('renamed run');

    vi.spyOn(window, 'confirm').mockReturnValue(true);
    await fireEvent.click(screen.getByTestId('delete'));
    await waitFor(() => expect(rows().length).toBe(0));
    const after = (await host.handle({ id: 2, method: 'runs.list' }, 'websocket')) as { ok: true; result: unknown[] };
    expect(after.result).toHaveLength(1);
  });

  it('shows a host error in place instead of an empty screen', async () => {
    const broken: Transport = {
      ...transport,
      send: async (m) => ({
        id: (m as { id: number }).id,
        ok: false,
        error: { code: 'unavailable', message: 'lost the connection to vramlab serve' },
      }),
    };
    render(RunsPanel, { props: { transport: broken, onopen: vi.fn() } });
    await waitFor(() => expect(screen.getByTestId('runs-error').textContent).toContain('lost the connection'));
  });

  it("names runs by model, fine-tune, mode and dtype, and files a fit's probes under one row", async () => {
    const home2 = mkdtempSync(path.join(os.tmpdir(), 'vramlab-runs-groups-'));
    const store = await RunStore.open(home2);
    const lora = await store.create(parseSpec({ model: { kind: 'llama' }, finetune: { method: 'lora', rank: 8 }, precision: 'bf16' }));
    await lora.finish('cancelled', null);
    for (let i = 0; i < 5; i++) {
      const w = await store.create(parseSpec({ batch: 2 ** (i + 4) }), {
        name: `fit probe batch=${2 ** (i + 4)}`,
        group: { kind: 'fit', id: 'fit-1', index: i, param: 'batch', value: 2 ** (i + 4) },
      });
      await w.finish('cancelled', null);
    }
    const host2 = createHost(loadAddon(), { home: home2 });
    const t2: Transport = { ...transport, send: (m) => host2.handle(m, 'websocket') };
    try {
      render(RunsPanel, { props: { transport: t2, onopen: vi.fn() } });
      await waitFor(() => expect(rows().length).toBe(2));
      const plain = document.querySelector(`tr[data-run-id="${lora.id}"]`)!;
      // The default name and the columns say what the run was.
      expect(plain.textContent).toMatch(/llama .*LoRA r8 b\d+ \w+ bf16/);
      const cells = [...plain.querySelectorAll('td')].map((td) => td.textContent!.trim());
      expect(cells).toEqual(expect.arrayContaining(['LoRA r8', 'train', 'bf16', 'sim:h100-80gb', 'cancelled']));
      const group = screen.getByTestId('run-group');
      expect(group.getAttribute('data-probes')).toBe('5');
      expect(group.textContent).toContain('fit over batch: 5 probes');
      await fireEvent.click(screen.getByTestId('toggle-group'));
      await waitFor(() => expect(rows().length).toBe(7));
      const probes = [...document.querySelectorAll('tr.probe')].map((tr) => tr.querySelector('[data-testid="open-run"]')!.textContent);
      expect(probes).toEqual([16, 32, 64, 128, 256].map((b) => `fit probe batch=${b}`));
    } finally {
      host2.dispose();
      rmSync(home2, { recursive: true, force: true });
    }
  });
});
