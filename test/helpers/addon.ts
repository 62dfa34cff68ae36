// The real native addon, as the app loads it (VRAMLAB_ADDON may point at another build).
import { loadAddon } from '../../main/addon/load';
export const native = loadAddon();
