// A map from numbers to values, kept in key order (a treap): insert, delete, the entry at or
// below a key and the one after it, each O(log n) expected. The state-at-start walk
// (window_start.ts) keeps segments and blocks in two of these, so undoing each trace event
// costs O(log n) however many segments and blocks there are (sorted arrays made it O(n)).

interface Node<V> {
  key: number;
  value: V;
  prio: number;
  left: Node<V> | null;
  right: Node<V> | null;
}

export class OrderedMap<V> {
  private root: Node<V> | null = null;
  private seed = 0x9e3779b9;
  size = 0;

  /** Deterministic priorities: the same input always builds the same tree. */
  private nextPrio(): number {
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed;
  }

  get(key: number): V | undefined {
    let n = this.root;
    while (n) {
      if (key === n.key) return n.value;
      n = key < n.key ? n.left : n.right;
    }
    return undefined;
  }

  /** The value with the largest key <= key. */
  floor(key: number): V | undefined {
    let n = this.root;
    let best: Node<V> | null = null;
    while (n) {
      if (n.key <= key) {
        best = n;
        n = n.right;
      } else n = n.left;
    }
    return best?.value;
  }

  /** The value with the smallest key > key. */
  after(key: number): V | undefined {
    let n = this.root;
    let best: Node<V> | null = null;
    while (n) {
      if (n.key > key) {
        best = n;
        n = n.left;
      } else n = n.right;
    }
    return best?.value;
  }

  /** The value with the largest key < key. */
  before(key: number): V | undefined {
    return this.floor(key - 0.5);
  }

  /** Sets key's value (replacing an existing one). */
  set(key: number, value: V): void {
    let n = this.root;
    while (n) {
      if (key === n.key) {
        n.value = value;
        return;
      }
      n = key < n.key ? n.left : n.right;
    }
    this.split(this.root, key);
    const hi = this.hi;
    const node: Node<V> = { key, value, prio: this.nextPrio(), left: null, right: null };
    this.root = this.merge(this.merge(this.lo, node), hi);
    this.size++;
  }

  delete(key: number): boolean {
    // Iterative descent to the node, then it is replaced by the merge of its children.
    let parent: Node<V> | null = null;
    let n = this.root;
    while (n && n.key !== key) {
      parent = n;
      n = key < n.key ? n.left : n.right;
    }
    if (!n) return false;
    const joined = this.merge(n.left, n.right);
    if (!parent) this.root = joined;
    else if (parent.left === n) parent.left = joined;
    else parent.right = joined;
    this.size--;
    return true;
  }

  /** Values in key order. */
  *values(): IterableIterator<V> {
    const stack: Node<V>[] = [];
    let n = this.root;
    while (n || stack.length) {
      while (n) {
        stack.push(n);
        n = n.left;
      }
      const top = stack.pop()!;
      yield top.value;
      n = top.right;
    }
  }

  /** Keys < key go left, the rest right (iterative: depth stays logarithmic, but no recursion is needed). */
  private split(t: Node<V> | null, key: number): void {
    // Build the two results top-down, hanging subtrees off placeholder heads (Node-shaped,
    // so every access here sees one object shape).
    const leftHead = this.head();
    const rightHead = this.head();
    let l = leftHead;
    let r = rightHead;
    let n = t;
    while (n) {
      if (n.key < key) {
        l.right = n;
        l = n;
        n = n.right;
      } else {
        r.left = n;
        r = n;
        n = n.left;
      }
    }
    l.right = null;
    r.left = null;
    this.lo = leftHead.right;
    this.hi = rightHead.left;
  }

  /** split's results (fields, not a fresh pair per call). */
  private lo: Node<V> | null = null;
  private hi: Node<V> | null = null;

  private head(): Node<V> {
    return { key: 0, value: undefined as V, prio: 0, left: null, right: null };
  }

  /** Every key of a is below every key of b. */
  private merge(a: Node<V> | null, b: Node<V> | null): Node<V> | null {
    const head = this.head();
    let parent = head;
    let intoRight = false;
    while (a && b) {
      if (a.prio > b.prio) {
        if (intoRight) parent.right = a;
        else parent.left = a;
        parent = a;
        intoRight = true;
        a = a.right;
      } else {
        if (intoRight) parent.right = b;
        else parent.left = b;
        parent = b;
        intoRight = false;
        b = b.left;
      }
    }
    if (intoRight) parent.right = a ?? b;
    else parent.left = a ?? b;
    return head.left;
  }
}
