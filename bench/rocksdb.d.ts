/** The one thing bench/state-engines.ts uses of `@nxtedition/rocksdb` (the package ships no types): an abstract-level store. */
declare module "@nxtedition/rocksdb" {
  import type { AbstractLevel } from "abstract-level";
  export class RocksLevel extends AbstractLevel<Buffer, Buffer, Buffer> {
    constructor(location: string, options: object);
  }
}
