/** A bounded ring of recent requests for `/_emulator/requests`: constant memory, O(1) per request. */
export interface RequestRecord {
  at: string;
  method: string;
  path: string;
  status: number;
  key_kind: "org" | "scoped" | "none";
  ms: number;
}

export interface RequestJournal {
  record(entry: RequestRecord): void;
  list(): RequestRecord[];
  clear(): void;
}

export function createRequestJournal(capacity = 500): RequestJournal {
  let ring: RequestRecord[] = [];
  let next = 0;
  return {
    record(entry) {
      if (ring.length < capacity) ring.push(entry);
      else ring[next] = entry;
      next = (next + 1) % capacity;
    },
    list: () => (ring.length < capacity ? [...ring] : [...ring.slice(next), ...ring.slice(0, next)]),
    clear() {
      ring = [];
      next = 0;
    },
  };
}
