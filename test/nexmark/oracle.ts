/**
 * The Nexmark oracle: the same bounded events the Eddy jobs read, generated again with
 * `nexmarkEvent(id, config)` for ids firstEventId .. firstEventId + events - 1, loaded into
 * DuckDB tables person / auction / bid (an in-memory database), and every query answered by SQL
 * over the whole input at once. Nothing here shares code with the jobs but the generator.
 *
 * Times are BIGINT milliseconds (as in the jobs), so windows are integer arithmetic: a tumbling
 * window starts at `dateTime - dateTime % size`, a sliding one at each multiple of the slide in
 * (dateTime - size, dateTime].
 */
import {
  BIGINT,
  DuckDBDataChunk,
  DuckDBInstance,
  JSToDuckDBValueConverter,
  VARCHAR,
  type DuckDBAppender,
  type DuckDBType,
} from "@duckdb/node-api";
import { nexmarkEvent, type NexmarkConfig } from "eddy";

export type Row = Record<string, unknown>;

/** Rows per appended chunk: DuckDB's vector size. */
const CHUNK_ROWS = 2048;

interface TableSpec {
  readonly name: "person" | "auction" | "bid";
  readonly columns: readonly (readonly [string, DuckDBType])[];
}

const TABLES: readonly TableSpec[] = [
  {
    name: "person",
    columns: [
      ["id", BIGINT],
      ["name", VARCHAR],
      ["emailAddress", VARCHAR],
      ["creditCard", VARCHAR],
      ["city", VARCHAR],
      ["state", VARCHAR],
      ["dateTime", BIGINT],
      ["extra", VARCHAR],
    ],
  },
  {
    name: "auction",
    columns: [
      ["id", BIGINT],
      ["itemName", VARCHAR],
      ["description", VARCHAR],
      ["initialBid", BIGINT],
      ["reserve", BIGINT],
      ["dateTime", BIGINT],
      ["expires", BIGINT],
      ["seller", BIGINT],
      ["category", BIGINT],
      ["extra", VARCHAR],
    ],
  },
  {
    name: "bid",
    columns: [
      ["auction", BIGINT],
      ["bidder", BIGINT],
      ["price", BIGINT],
      ["channel", VARCHAR],
      ["url", VARCHAR],
      ["dateTime", BIGINT],
      ["extra", VARCHAR],
    ],
  },
];

/** Column-wise buffers of one table, appended to DuckDB a chunk at a time. */
class TableLoader {
  readonly #spec: TableSpec;
  readonly #columns: unknown[][];
  readonly #chunk: DuckDBDataChunk;
  readonly #appender: DuckDBAppender;

  constructor(spec: TableSpec, appender: DuckDBAppender) {
    this.#spec = spec;
    this.#columns = spec.columns.map(() => []);
    this.#chunk = DuckDBDataChunk.create(spec.columns.map(([, type]) => type));
    this.#appender = appender;
  }

  add(record: object): void {
    const columns = this.#spec.columns;
    const fields = record as Readonly<Record<string, unknown>>;
    for (let i = 0; i < columns.length; i++) this.#columns[i]!.push(fields[columns[i]![0]]);
    if (this.#columns[0]!.length === CHUNK_ROWS) this.flush();
  }

  flush(): void {
    if (this.#columns[0]!.length === 0) return;
    this.#chunk.setColumnsConverted(this.#columns as never[][], JSToDuckDBValueConverter);
    this.#appender.appendDataChunk(this.#chunk);
    for (const column of this.#columns) column.length = 0;
  }

  close(): void {
    this.flush();
    this.#appender.closeSync();
  }
}

export interface NexmarkOracle {
  /** Runs `sql`; BIGINT values come back as numbers (all are below 2^53 here). */
  query(sql: string): Promise<Row[]>;
  close(): void;
}

/** An in-memory DuckDB holding events firstEventId .. firstEventId + events - 1 of `config`. */
export async function nexmarkOracle(events: number, config: NexmarkConfig): Promise<NexmarkOracle> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const loaders = new Map<string, TableLoader>();
  for (const spec of TABLES) {
    const columns = spec.columns.map(([name, type]) => `"${name}" ${type.toString()}`).join(", ");
    await connection.run(`CREATE TABLE ${spec.name} (${columns})`);
    loaders.set(spec.name, new TableLoader(spec, await connection.createAppender(spec.name)));
  }
  const person = loaders.get("person")!;
  const auction = loaders.get("auction")!;
  const bid = loaders.get("bid")!;
  const end = config.firstEventId + events;
  for (let id = config.firstEventId; id < end; id++) {
    const e = nexmarkEvent(id, config);
    if (e.person !== undefined) person.add(e.person);
    else if (e.auction !== undefined) auction.add(e.auction);
    else if (e.bid !== undefined) bid.add(e.bid);
  }
  for (const loader of loaders.values()) loader.close();
  return {
    async query(sql) {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRowObjectsJS().map((row) => {
        const out: Row = {};
        for (const [k, v] of Object.entries(row)) out[k] = typeof v === "bigint" ? Number(v) : v;
        return out;
      });
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** The columns q15 and q16 share: bids, distinct bidders and distinct auctions, in total and per price band. */
const BIDDING_STATISTICS = `
      count(*) AS "totalBids",
      count(*) FILTER (WHERE price < 10000) AS "rank1Bids",
      count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS "rank2Bids",
      count(*) FILTER (WHERE price >= 1000000) AS "rank3Bids",
      count(DISTINCT bidder) AS "totalBidders",
      count(DISTINCT bidder) FILTER (WHERE price < 10000) AS "rank1Bidders",
      count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS "rank2Bidders",
      count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS "rank3Bidders",
      count(DISTINCT auction) AS "totalAuctions",
      count(DISTINCT auction) FILTER (WHERE price < 10000) AS "rank1Auctions",
      count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS "rank2Auctions",
      count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS "rank3Auctions"`;

/**
 * The queries in DuckDB SQL, following the Flink SQL of the nexmark/nexmark suite (quoted in each
 * job's header). Where DuckDB spells something differently, or the job documents a deviation, the
 * comment says so. Output columns are named like the jobs' result fields.
 */
export const ORACLE_SQL = {
  q0: `SELECT auction, bidder, price, "dateTime", extra FROM bid`,

  // DuckDB, like Flink, computes 0.908 * price as an exact DECIMAL; it is read back as the nearest double.
  q1: `SELECT auction, bidder, CAST(0.908 * price AS DOUBLE) AS price, "dateTime", extra FROM bid`,

  q2: `SELECT auction, price FROM bid WHERE auction % 123 = 0`,

  q3: `
    SELECT P.name, P.city, P.state, A.id
    FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
    WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')`,

  // As in Flink, AVG of a BIGINT column is a BIGINT: the sum divided by the count, truncated.
  q4: `
    SELECT Q.category, CAST(sum(Q.final) // count(*) AS BIGINT) AS final
    FROM (
      SELECT max(B.price) AS final, A.category
      FROM auction A, bid B
      WHERE A.id = B.auction AND B."dateTime" BETWEEN A."dateTime" AND A.expires
      GROUP BY A.id, A.category
    ) Q
    GROUP BY Q.category`,

  // The reference orders by price DESC, dateTime ASC only; ties are broken as the job does (see
  // examples/nexmark/winning-bids.ts): by bidder, channel, url, extra.
  q9: `
    SELECT id, "itemName", description, "initialBid", reserve, "dateTime", expires, seller, category, extra,
      auction, bidder, price, "bidDateTime", "bidExtra"
    FROM (
      SELECT A.*, B.auction, B.bidder, B.price, B."dateTime" AS "bidDateTime", B.extra AS "bidExtra",
        row_number() OVER (
          PARTITION BY A.id ORDER BY B.price DESC, B."dateTime" ASC, B.bidder, B.channel, B.url, B.extra
        ) AS rownum
      FROM auction A, bid B
      WHERE A.id = B.auction AND B."dateTime" BETWEEN A."dateTime" AND A.expires
    )
    WHERE rownum <= 1`,

  // The suite's side input, generated here by DuckDB (the job reads it from a CSV file it writes).
  q13: `
    SELECT B.auction, B.bidder, B.price, B."dateTime", S.value
    FROM bid B JOIN (SELECT i AS key, CAST(i AS VARCHAR) AS value FROM range(10000) t(i)) S
      ON B.auction % 10000 = S.key`,

  // HOP(2 s slide, 10 s size): each bid is in the 5 windows starting at the multiples of 2 s in (dateTime - 10 s, dateTime].
  q5: `
    WITH hop AS (
      SELECT auction, ("dateTime" - "dateTime" % 2000) - k * 2000 AS starttime
      FROM bid, range(0, 5) AS t(k)
    ),
    AuctionBids AS (
      SELECT auction, count(*) AS num, starttime, starttime + 10000 AS endtime
      FROM hop GROUP BY auction, starttime
    ),
    MaxBids AS (
      SELECT max(num) AS maxn, starttime, endtime FROM AuctionBids GROUP BY starttime, endtime
    )
    SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime, AuctionBids.endtime
    FROM AuctionBids JOIN MaxBids
      ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
     AND AuctionBids.num >= MaxBids.maxn`,

  // The reference's "B.dateTime BETWEEN end - 10 s AND end" is closed at the end; the job (see
  // q7.ts) takes the window's own bids, [end - 10 s, end), and so does this.
  q7: `
    SELECT B.auction, B.price, B.bidder, B."dateTime", B.extra
    FROM bid B
    JOIN (
      SELECT max(price) AS maxprice, ("dateTime" - "dateTime" % 10000) + 10000 AS "dateTime"
      FROM bid GROUP BY ("dateTime" - "dateTime" % 10000)
    ) B1 ON B.price = B1.maxprice
    WHERE B."dateTime" >= B1."dateTime" - 10000 AND B."dateTime" < B1."dateTime"`,

  q8: `
    SELECT P.id, P.name, P.starttime
    FROM (
      SELECT id, name, "dateTime" - "dateTime" % 10000 AS starttime
      FROM person GROUP BY id, name, starttime
    ) P
    JOIN (
      SELECT seller, "dateTime" - "dateTime" % 10000 AS starttime
      FROM auction GROUP BY seller, starttime
    ) A ON P.id = A.seller AND P.starttime = A.starttime`,

  // SESSION(10 s): a bidder's bids sorted by time; a bid more than 10 s after the previous one
  // opens a new session (Flink's session windows merge when the gap is exactly 10 s). A session
  // ends 10 s after its last bid.
  q11: `
    WITH marked AS (
      SELECT bidder, "dateTime",
        CASE WHEN "dateTime" - lag("dateTime") OVER (PARTITION BY bidder ORDER BY "dateTime") <= 10000 THEN 0 ELSE 1 END AS opens
      FROM bid
    ),
    numbered AS (
      -- The default frame (RANGE ... CURRENT ROW) counts bids of the same millisecond together,
      -- whichever of them lag() saw first.
      SELECT bidder, "dateTime", sum(opens) OVER (PARTITION BY bidder ORDER BY "dateTime") AS session
      FROM marked
    )
    SELECT bidder, count(*) AS "bidCount", min("dateTime") AS starttime, max("dateTime") + 10000 AS endtime
    FROM numbered GROUP BY bidder, session`,

  // q12 windows by processing time, which no batch query knows; what SQL can say is how many bids
  // each bidder made over all windows together.
  q12: `SELECT bidder, count(*) AS "bidCount" FROM bid GROUP BY bidder`,

  // HOUR in UTC: epoch_ms gives a TIMESTAMP without time zone. count_char(extra, 'c') by length difference.
  q14: `
    SELECT auction, bidder, CAST(0.908 * price AS DOUBLE) AS price,
      CASE WHEN hour(epoch_ms("dateTime")) >= 8 AND hour(epoch_ms("dateTime")) <= 18 THEN 'dayTime'
           WHEN hour(epoch_ms("dateTime")) <= 6 OR hour(epoch_ms("dateTime")) >= 20 THEN 'nightTime'
           ELSE 'otherTime' END AS "bidTimeType",
      "dateTime", extra,
      length(extra) - length(replace(extra, 'c', '')) AS "cCounts"
    FROM bid
    WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000`,

  // DATE_FORMAT(dateTime, 'yyyy-MM-dd') in UTC: epoch_ms gives a TIMESTAMP without time zone.
  q15: `
    SELECT strftime(epoch_ms("dateTime"), '%Y-%m-%d') AS day,
      ${BIDDING_STATISTICS}
    FROM bid
    GROUP BY day`,

  q16: `
    SELECT channel, strftime(epoch_ms("dateTime"), '%Y-%m-%d') AS day,
      max(strftime(epoch_ms("dateTime"), '%H:%M')) AS minute,
      ${BIDDING_STATISTICS}
    FROM bid
    GROUP BY channel, day`,

  // avg of BIGINT is a BIGINT in Flink (truncated), as in the reference sink's avg_price column.
  q17: `
    SELECT auction, strftime(epoch_ms("dateTime"), '%Y-%m-%d') AS day,
      count(*) AS "totalBids",
      count(*) FILTER (WHERE price < 10000) AS "rank1Bids",
      count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS "rank2Bids",
      count(*) FILTER (WHERE price >= 1000000) AS "rank3Bids",
      min(price) AS "minPrice",
      max(price) AS "maxPrice",
      CAST(sum(price) // count(*) AS BIGINT) AS "avgPrice",
      CAST(sum(price) AS BIGINT) AS "sumPrice"
    FROM bid
    GROUP BY auction, day`,

  // The reference orders by dateTime DESC only; ties of a millisecond are broken as the job
  // does (see q18.ts): by price, channel, url, extra, all descending.
  q18: `
    SELECT auction, bidder, price, channel, url, "dateTime", extra
    FROM (
      SELECT *, row_number() OVER (
        PARTITION BY bidder, auction ORDER BY "dateTime" DESC, price DESC, channel DESC, url DESC, extra DESC
      ) AS rank_number
      FROM bid
    )
    WHERE rank_number <= 1`,

  // The reference orders by price DESC only; ties are broken as the job does (see q19.ts).
  q19: `
    SELECT auction, bidder, price, channel, url, "dateTime", extra, rank_number AS "rankNumber"
    FROM (
      SELECT *, row_number() OVER (
        PARTITION BY auction ORDER BY price DESC, "dateTime", bidder, channel, url, extra
      ) AS rank_number
      FROM bid
    )
    WHERE rank_number <= 10`,

  q20: `
    SELECT auction, bidder, price, channel, url, B."dateTime" AS "bidDateTime", B.extra AS "bidExtra",
      "itemName", description, "initialBid", reserve, A."dateTime" AS "auctionDateTime", expires, seller,
      category, A.extra AS "auctionExtra"
    FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
    WHERE A.category = 10`,

  // DuckDB's regexp_extract gives '' where Flink's REGEXP_EXTRACT gives NULL (no match): hence the CASE.
  q21: `
    SELECT auction, bidder, price, channel,
      CASE WHEN lower(channel) = 'apple' THEN '0'
           WHEN lower(channel) = 'google' THEN '1'
           WHEN lower(channel) = 'facebook' THEN '2'
           WHEN lower(channel) = 'baidu' THEN '3'
           ELSE url_channel_id END AS "channelId"
    FROM (
      SELECT *, CASE WHEN regexp_matches(url, '(&|^)channel_id=([^&]*)')
                     THEN regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) END AS url_channel_id
      FROM bid
    )
    WHERE url_channel_id IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')`,

  // SPLIT_INDEX(url, '/', i) is 0-based and NULL past the end; DuckDB lists are 1-based and also NULL past the end.
  q22: `
    SELECT auction, bidder, price, channel,
      string_split(url, '/')[4] AS dir1, string_split(url, '/')[5] AS dir2, string_split(url, '/')[6] AS dir3
    FROM bid`,
} as const;

export type OracleQuery = keyof typeof ORACLE_SQL;
