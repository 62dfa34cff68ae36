// Which frames of a PyTorch stack are shown first: the user's Python (a .py file or code
// run from a string, outside torch's package), then torch's own Python; native frames
// only when the stack has no Python frame at all, whatever their line numbers.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { frameKind } from '../../main/contract/snapshot';
import { formatFrame, isPythonFrame, isUserFrame, topFrames } from '../../main/snapshot/frames';
import { loadSnapshotFile } from '../../main/snapshot/import';

const f = (filename: string, line: number, name: string) => ({ filename, line, name });
const SITE = '/opt/venv/lib/python3.12/site-packages';

describe('frame rule', () => {
  it('Python frames are .py files and exec’d code; C++ frames are not, even with a line', () => {
    expect(isPythonFrame(f('/home/me/train.py', 12, 'step'))).toBe(true);
    expect(isPythonFrame(f('<string>', 3, '<module>'))).toBe(true);
    expect(isPythonFrame(f('<ipython-input-4-1a2b>', 1, '<module>'))).toBe(true);
    expect(isPythonFrame(f('<frozen runpy>', 88, '_run_code'))).toBe(false);
    expect(isPythonFrame(f('aten/src/ATen/native/cuda/Reduce.cuh', 1234, 'gpu_reduce_kernel'))).toBe(false);
    expect(isPythonFrame(f('??', 0, 'at::native::empty_cuda'))).toBe(false);
  });

  it("user frames are Python outside torch's package: transformers counts as the user's, torch does not", () => {
    expect(isUserFrame(f(`${SITE}/transformers/models/llama/modeling_llama.py`, 300, 'forward'))).toBe(true);
    expect(isUserFrame(f('/work/steering/refs/t2_protocol.py', 16, 'forward'))).toBe(true);
    expect(isUserFrame(f(`${SITE}/torch/nn/modules/linear.py`, 134, 'forward'))).toBe(false);
    expect(isUserFrame(f('torch/nn/functional.py', 1723, 'relu'))).toBe(false);
    expect(isUserFrame(f('/src/mytorch/model.py', 5, 'forward'))).toBe(true);
  });

  it('a stack with a C++ kernel innermost and a line-numbered C++ file shows the user frame first, then torch', () => {
    const stack = [
      f('CUDACachingAllocator.cpp', 0, 'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc'),
      f('Reduce.cuh', 1234, 'void at::native::gpu_reduce_kernel<float>'),
      f(`${SITE}/torch/nn/modules/linear.py`, 134, 'forward'),
      f(`${SITE}/torch/nn/modules/module.py`, 1790, '_call_impl'),
      f('/home/me/model.py', 16, 'forward'),
      f('/home/me/train.py', 44, 'main'),
    ];
    expect(topFrames(stack, 3)).toEqual([
      '/home/me/model.py:16:forward',
      '/home/me/train.py:44:main',
      `${SITE}/torch/nn/modules/linear.py:134:forward`,
    ]);
  });

  it('the screens read a sent frame ("file:line:name") by the same rule', () => {
    const frames = [
      f('/home/me/model.py', 16, 'forward'),
      f('<string>', 37, '<module>'),
      f(`${SITE}/torch/nn/functional.py`, 1723, 'relu'),
      f('Reduce.cuh', 1234, 'void at::native::gpu_reduce_kernel<float, float, 4, 4>'),
      f('??', 0, 'at::native::empty_cuda'),
      f('C:\\Users\\me\\train.py', 9, 'main'),
    ];
    expect(frames.map((x) => frameKind(formatFrame(x)))).toEqual(['user', 'user', 'torch', 'native', 'native', 'user']);
    for (const x of frames) expect(frameKind(formatFrame(x)) === 'user').toBe(isUserFrame(x));
  });

  it('on a real OOM snapshot: the failed allocation names the user code first, torch op after', () => {
    const s = loadSnapshotFile(path.resolve(import.meta.dirname, '../fixtures/torch/residual_oom_capped.pickle'));
    const oom = s.deviceTraces[0].find((e) => e.action === 'oom')!;
    const top = topFrames(oom.frames);
    expect(top[0]).toMatch(/t2_protocol\.py:16:forward$/);
    const firstTorch = top.findIndex((x) => /site-packages\/torch\//.test(x));
    expect(firstTorch).toBeGreaterThan(0);
    expect(top.slice(0, firstTorch).every((x) => !/\/torch\//.test(x))).toBe(true);
  });
});
