export * from './card';
export * from './devices';
export * from './messages';
export * from './methods';
export * from './playground';
export * from './run_methods';
