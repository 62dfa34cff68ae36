// Text from a snapshot is untrusted: a frame name or file name in a pickle can hold
// terminal control sequences (an OSC 52 clipboard write, clear-screen, a window title).
// Every C0 control, DEL and every C1 control (U+0080-U+009F, which some terminals obey
// as escapes too) becomes U+FFFD before such text is shown anywhere.

// eslint-disable-next-line no-control-regex -- matching control characters is this file's job
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
/** The same, but keeping newline and tab: for whole lines of output. */
// eslint-disable-next-line no-control-regex -- as above
const CONTROLS_BUT_LAYOUT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** One string from a snapshot (a frame, a file name): no control character survives. */
export function printable(s: string): string {
  return s.replace(CONTROLS, '\ufffd');
}

/** Output text built from snapshot strings: its own newlines and tabs stay. */
export function printableText(s: string): string {
  return s.replace(CONTROLS_BUT_LAYOUT, '\ufffd');
}
