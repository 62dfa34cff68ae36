// One Content-Security-Policy for the desktop window and the served page: our own scripts
// and styles only, no remote content; connect-src allows the WebSocket back to our host.
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'", // Svelte transitions and chart.js set inline styles
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self' ws://127.0.0.1:* ws://localhost:*",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
