// Which frame may call the host over IPC: the top frame showing our own index.html, and
// nothing else. Compared as file: URLs built by pathToFileURL, because 'file://' + a path
// breaks on Windows (C:\ and backslashes) and on paths with spaces or '#' (percent-encoded
// in a URL), and a prefix test would also trust index.html.evil or index.html/../other.
import { pathToFileURL } from 'node:url';

export function rendererHref(indexPath: string): string {
  return pathToFileURL(indexPath).href;
}

/** True when `frameUrl` is exactly `indexHref`, ignoring the query and the #tab. */
export function isRendererUrl(frameUrl: string | undefined, indexHref: string): boolean {
  if (!frameUrl) return false;
  let u: URL;
  try {
    u = new URL(frameUrl);
  } catch {
    return false;
  }
  if (u.protocol !== 'file:') return false;
  u.hash = '';
  u.search = '';
  return u.href === indexHref;
}
