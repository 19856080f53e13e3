import { useState } from 'react';
import { useNavigate } from 'react-router';
import { api, session } from '../lib/api';
import { ErrorBox } from '../components/ErrorBox';

/** Sign-in with an API key (the admin token or a scoped key), checked against GET /v1/quotas. */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const navigate = useNavigate();
  const [notice] = useState(() => session.takeNotice());
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('/v1/quotas', { key: key.trim() });
      session.signIn(key.trim());
      onSignedIn();
      void navigate('/sandboxes');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <div className="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Warren</h1>
        <p className="muted">
          Sign in with an API key: the admin token (~/.warren/admin-token) or a scoped key.
        </p>
        {notice && (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          placeholder="wrn_…"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          required
          autoFocus
        />
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorBox error={error} title="Sign-in failed" />
        <p className="muted small">The key is kept in this tab's session storage only.</p>
      </form>
    </div>
  );
}
