export * from './devices';
export * from './messages';
export * from './methods';
