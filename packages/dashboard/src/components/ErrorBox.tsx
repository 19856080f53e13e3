import { ApiError } from '../lib/api';

/** An API error with its code and message (and request id), never a blank page. */
export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const e =
    error instanceof ApiError
      ? error
      : new ApiError(0, 'CLIENT_ERROR', error instanceof Error ? error.message : String(error));
  return (
    <div className="error" role="alert">
      {title && <strong>{title}: </strong>}
      <code className="error-code">{e.code}</code> {e.message}
      {e.requestId && <span className="muted"> (request {e.requestId})</span>}
    </div>
  );
}

export function NotFound() {
  return <ErrorBox error={new ApiError(404, 'NOT_FOUND', 'no such page in the dashboard')} />;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}
