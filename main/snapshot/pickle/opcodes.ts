// Python pickle opcodes (protocols 0-5, as listed by CPython's pickletools), split into
// what vramlab reads (plain data) and what it refuses (anything that imports, calls or
// constructs Python objects, or needs data from outside the file).

export const Op = {
  // protocol 0/1: text and early binary forms
  MARK: 0x28, // (
  STOP: 0x2e, // .
  POP: 0x30, // 0
  POP_MARK: 0x31, // 1
  DUP: 0x32, // 2
  FLOAT: 0x46, // F
  INT: 0x49, // I
  BININT: 0x4a, // J
  BININT1: 0x4b, // K
  LONG: 0x4c, // L
  BININT2: 0x4d, // M
  NONE: 0x4e, // N
  PERSID: 0x50, // P
  BINPERSID: 0x51, // Q
  REDUCE: 0x52, // R
  STRING: 0x53, // S
  BINSTRING: 0x54, // T
  SHORT_BINSTRING: 0x55, // U
  UNICODE: 0x56, // V
  BINUNICODE: 0x58, // X
  APPEND: 0x61, // a
  BUILD: 0x62, // b
  GLOBAL: 0x63, // c
  DICT: 0x64, // d
  EMPTY_DICT: 0x7d, // }
  APPENDS: 0x65, // e
  GET: 0x67, // g
  BINGET: 0x68, // h
  INST: 0x69, // i
  LONG_BINGET: 0x6a, // j
  LIST: 0x6c, // l
  EMPTY_LIST: 0x5d, // ]
  OBJ: 0x6f, // o
  PUT: 0x70, // p
  BINPUT: 0x71, // q
  LONG_BINPUT: 0x72, // r
  SETITEM: 0x73, // s
  TUPLE: 0x74, // t
  EMPTY_TUPLE: 0x29, // )
  SETITEMS: 0x75, // u
  BINFLOAT: 0x47, // G
  // protocol 2
  PROTO: 0x80,
  NEWOBJ: 0x81,
  EXT1: 0x82,
  EXT2: 0x83,
  EXT4: 0x84,
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  LONG1: 0x8a,
  LONG4: 0x8b,
  // protocol 3
  BINBYTES: 0x42, // B
  SHORT_BINBYTES: 0x43, // C
  // protocol 4
  SHORT_BINUNICODE: 0x8c,
  BINUNICODE8: 0x8d,
  BINBYTES8: 0x8e,
  EMPTY_SET: 0x8f,
  ADDITEMS: 0x90,
  FROZENSET: 0x91,
  NEWOBJ_EX: 0x92,
  STACK_GLOBAL: 0x93,
  MEMOIZE: 0x94,
  FRAME: 0x95,
  // protocol 5
  BYTEARRAY8: 0x96,
  NEXT_BUFFER: 0x97,
  READONLY_BUFFER: 0x98,
} as const;

export type OpName = keyof typeof Op;

const NAMES = new Map<number, OpName>(Object.entries(Op).map(([k, v]) => [v, k as OpName]));

export function opName(code: number): OpName | undefined {
  return NAMES.get(code);
}

/** Why each refused opcode is refused: shown to the user in the error. */
export const REFUSED: Partial<Record<OpName, string>> = {
  GLOBAL: 'it imports a Python object by name (the first step of running code)',
  STACK_GLOBAL: 'it imports a Python object by name (the first step of running code)',
  INST: 'it imports a class and calls it',
  OBJ: 'it calls a class to construct an object',
  REDUCE: 'it calls a Python callable',
  BUILD: "it sets an object's state (calls __setstate__)",
  NEWOBJ: 'it constructs an object (cls.__new__)',
  NEWOBJ_EX: 'it constructs an object (cls.__new__)',
  PERSID: 'it asks for a persistent object from outside the file',
  BINPERSID: 'it asks for a persistent object from outside the file',
  EXT1: 'it imports a Python object from the extension registry',
  EXT2: 'it imports a Python object from the extension registry',
  EXT4: 'it imports a Python object from the extension registry',
  NEXT_BUFFER: 'it needs an out-of-band buffer from outside the file',
  READONLY_BUFFER: 'it wraps an out-of-band buffer from outside the file',
};

/** Human label for an opcode byte: `GLOBAL (0x63 'c')`. */
export function describeOp(code: number): string {
  const name = opName(code) ?? 'unknown opcode';
  const hex = `0x${code.toString(16).padStart(2, '0')}`;
  const ch = code >= 0x20 && code < 0x7f ? ` '${String.fromCharCode(code)}'` : '';
  return `${name} (${hex}${ch})`;
}

/** Highest pickle protocol Python defines (and that the reader accepts in PROTO). */
export const HIGHEST_PROTOCOL = 5;
