/**
 * Kafka's default partitioner for keyed records: `toPositive(murmur2(key)) % partitions`, with
 * murmur2 exactly as Kafka's Java client (Utils.murmur2) and librdkafka (rd_murmur2) compute it,
 * so that a key lands on the same partition whichever client wrote it (joins and compacted
 * topics depend on that).
 */

/** Kafka's murmur2 of `data` (seed 0x9747b28c), as a signed 32-bit integer like Java's. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4]! & 0xff) | ((data[i4 + 1]! & 0xff) << 8) | ((data[i4 + 2]! & 0xff) << 16) | ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & ~3;
  // Kafka's switch falls through from 3 to 1.
  const rest = length % 4;
  if (rest >= 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner gives a record with key `key`. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}
