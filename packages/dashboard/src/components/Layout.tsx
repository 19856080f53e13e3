import { NavLink, Outlet, useNavigate } from 'react-router';
import { session } from '../lib/api';

const LINKS = [
  ['/sandboxes', 'Sandboxes'],
  ['/snapshots', 'Snapshots'],
  ['/templates', 'Templates'],
  ['/volumes', 'Volumes'],
  ['/databases', 'Databases'],
  ['/usage', 'Usage'],
  ['/audit', 'Audit log'],
] as const;

export function Layout({ onSignOut }: { onSignOut: () => void }) {
  const navigate = useNavigate();
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">Warren</span>
        <nav aria-label="Main">
          {LINKS.map(([to, label]) => (
            <NavLink key={to} to={to}>
              {label}
            </NavLink>
          ))}
        </nav>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            session.signOut('Signed out.');
            onSignOut();
            void navigate('/sign-in');
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Outlet />
      </main>
    </div>
  );
}
