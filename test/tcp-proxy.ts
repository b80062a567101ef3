/**
 * A TCP proxy on loopback in front of a test server, whose connections the test can drop: a lost
 * network path, with the server itself (and what it stored) untouched.
 */
import { createConnection, createServer, type Socket } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** Cuts every connection through the proxy and refuses new ones for `downMs`. */
  drop(downMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: "127.0.0.1", port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address !== "object") throw new Error("the proxy has no port");
  return {
    port: address.port,
    async drop(downMs) {
      refusing = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise((r) => setTimeout(r, downMs));
      refusing = false;
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
