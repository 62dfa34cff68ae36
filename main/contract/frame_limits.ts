// The bounds on one frame either way, in a file of their own so that the Electron preload can
// check them without bundling the contract's schemas.

/** Largest frame the server sends; a larger response goes as PartMessages of this size. */
export const MAX_FRAME_CHARS = 1 << 20;

/** Max bytes of one incoming message: specs and commands are small; anything larger is hostile. */
export const MAX_MESSAGE_BYTES = 1 << 20;
