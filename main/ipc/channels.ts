// IPC channel names shared by the preload script and the main process.
export const CHANNEL_REQUEST = 'vramlab:request';
export const CHANNEL_EVENT = 'vramlab:event';
