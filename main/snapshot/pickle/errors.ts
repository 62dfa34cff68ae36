// The one error type the pickle reader and writer throw: a code a program can switch on,
// and a message that names the opcode and byte offset for a person.

export type PickleErrorCode =
  | 'refused-opcode' // GLOBAL, REDUCE, ...: would import or run Python code
  | 'unknown-opcode'
  | 'truncated' // the input ends inside an opcode or frame
  | 'bad-memo' // GET of an index never PUT
  | 'stack-underflow' // an opcode needs more items than the stack (above the last MARK) holds
  | 'malformed' // anything else structurally wrong (bad types, odd SETITEMS, trailing data...)
  | 'limit'; // a size/depth/count limit was exceeded

export class PickleError extends Error {
  override name = 'PickleError';
  constructor(
    readonly code: PickleErrorCode,
    message: string,
    /** Byte offset of the opcode at fault (-1 when not tied to one, e.g. in the writer). */
    readonly offset = -1,
    /** The opcode byte at fault, when there is one. */
    readonly opcode?: number,
  ) {
    super(message);
  }
}
