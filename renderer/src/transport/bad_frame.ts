// A packed frame the page refused: said once on the console with its reason. Nothing else is
// needed: a run's batches are numbered, so a refused one makes the live view reload the run.
import { PackedFrameError } from '$contract/packed_progress';

export function reportBadFrame(err: unknown): void {
  if (!(err instanceof PackedFrameError)) throw err;
  console.error(`vramlab: ${err.message}; the frame was dropped`);
}
