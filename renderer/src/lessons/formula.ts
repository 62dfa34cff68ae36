// The back-of-envelope formula people use before measuring, kept here for the one lesson
// that compares it with the engine: parameters x (4 weights + 4 gradients + 8 Adam) bytes,
// plus batch x what autograd keeps per sample (each ReLU output and the logits, fp32).
// It is deliberately naive; the lesson is about what it leaves out.
export interface MlpShape {
  in: number;
  hidden: number;
  depth: number;
  out: number;
}

export function mlpParameters(m: MlpShape): number {
  return m.in * m.hidden + m.hidden + (m.depth - 1) * (m.hidden * m.hidden + m.hidden) + m.hidden * m.out + m.out;
}

/** The formula's peak for an MLP trained with Adam in fp32, bytes. */
export function backOfEnvelope(m: MlpShape, batch: number): { parameters: number; states: number; activations: number; bytes: number } {
  const parameters = mlpParameters(m);
  const states = parameters * (4 + 4 + 8);
  const activations = batch * (m.depth * m.hidden + m.out) * 4;
  return { parameters, states, activations, bytes: states + activations };
}
