/**
 * The page's calls to the job's control server: GETs with the session cookie (sent by the
 * browser, HttpOnly, never seen here), POSTs with the session's CSRF token from the page's meta
 * tag. Answers are JSON; a failure's `{ error: { code, message } }` becomes an ApiError.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function meta(name: string): string {
  const value = document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content;
  if (value === undefined || value === "") throw new Error(`the page has no ${name} meta tag (open it through the login link)`);
  return value;
}

export const jobId = (): string => meta("eddy-job");
const csrfToken = (): string => meta("eddy-csrf");

async function answer<T>(res: Response): Promise<T> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(res.status, "BAD_ANSWER", `HTTP ${res.status} with a body that is not JSON`);
  }
  if (res.ok) return body as T;
  const error = (body as { error?: { code?: string; message?: string } }).error;
  throw new ApiError(res.status, error?.code ?? "UNKNOWN", error?.message ?? `HTTP ${res.status}`);
}

export async function get<T>(path: string): Promise<T> {
  return answer<T>(await fetch(path, { credentials: "same-origin", headers: { accept: "application/json" } }));
}

export async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
  return answer<T>(
    await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-eddy-csrf": csrfToken() },
      body: JSON.stringify(body),
    }),
  );
}
