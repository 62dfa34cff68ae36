// Saves text as a file: an anchor with a blob: URL and `download`, which is a save in
// the browser and, in Electron (whose window blocks navigation), goes through the
// session's download handler (a save dialog) instead of navigating.
export function downloadText(filename: string, text: string, type: string): void {
  const blob = new Blob([text], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // Revoke after the click has been handled, so the download has read the blob.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A file-name-safe stem from a run name. */
export function fileStem(name: string): string {
  return (
    name
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 80) || 'run'
  );
}
