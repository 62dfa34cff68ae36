// The desktop app trusts IPC only from its own index.html frame, and serves a strict CSP: which frame it trusts over IPC, and the CSP it serves.
// The sender check used `'file://' + path` and a prefix test: it failed for paths with
// spaces or '#' (percent-encoded in the frame URL) and on Windows (C:\, backslashes), and
// trusted any file whose name merely started with index.html.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isRendererUrl, rendererHref } from '../../main/electron/trust';
import { CSP, servedCsp } from '../../main/contract/csp';

describe('IPC sender check', () => {
  const dirs = ['/opt/vramlab/resources/app', '/home/a user/My Apps/vram#lab', '/tmp/ünïcødé/%20already'];
  for (const dir of dirs) {
    const index = path.join(dir, 'dist', 'renderer', 'index.html');
    const href = rendererHref(index);
    it(`trusts ${JSON.stringify(dir)}'s index.html as Chromium reports it, with or without #tab`, () => {
      const frameUrl = pathToFileURL(index).href; // what senderFrame.url holds
      expect(isRendererUrl(frameUrl, href)).toBe(true);
      expect(isRendererUrl(`${frameUrl}#snapshot`, href)).toBe(true);
      expect(isRendererUrl(`${frameUrl}?x=1`, href)).toBe(true);
      // The old check: 'file://' + path, then startsWith.
      const old = 'file://' + path.resolve(index);
      // eslint-disable-next-line no-control-regex -- any non-ASCII character, so the range starts at \x00
      if (/[ #%]|[^\x00-\x7f]/.test(dir)) expect(frameUrl.startsWith(old)).toBe(false);
    });
    it(`refuses look-alikes of ${JSON.stringify(dir)}'s index.html`, () => {
      for (const other of [`${index}.evil.html`, path.join(dir, 'dist', 'renderer', 'other.html'), path.join(dir, 'index.html')])
        expect(isRendererUrl(pathToFileURL(other).href, href)).toBe(false);
      expect(isRendererUrl('http://127.0.0.1:8123/index.html', href)).toBe(false);
      expect(isRendererUrl(undefined, href)).toBe(false);
      expect(isRendererUrl('not a url', href)).toBe(false);
    });
  }

  it('Windows paths compare as file URLs (drive letter, backslashes, spaces)', () => {
    // pathToFileURL follows the running platform; a Windows frame URL looks like this.
    const href = 'file:///C:/Program%20Files/vramlab/resources/app/dist/renderer/index.html';
    expect(isRendererUrl('file:///C:/Program%20Files/vramlab/resources/app/dist/renderer/index.html#runs', href)).toBe(true);
    expect(isRendererUrl('file:///C:/Program%20Files/vramlab/resources/app/dist/renderer/index.htmlx', href)).toBe(false);
  });
});

describe('CSP', () => {
  it('the desktop window allows no WebSocket at all; the served page only its own host:port', () => {
    expect(CSP).toMatch(/connect-src 'self'(;|$)/);
    expect(CSP).not.toMatch(/ws:/);
    expect(servedCsp('127.0.0.1:8123')).toMatch(/connect-src 'self' ws:\/\/127\.0\.0\.1:8123(;|$)/);
    expect(servedCsp('localhost:9000')).toMatch(/ws:\/\/localhost:9000/);
    expect(servedCsp('evil.example:8123')).not.toMatch(/ws:/);
    expect(servedCsp('127.0.0.1:8123 ws://evil.example')).not.toMatch(/evil/);
    for (const c of [CSP, servedCsp('127.0.0.1:1')]) expect(c).not.toMatch(/\*/);
  });
});
