/**
 * The app shell: TanStack Query's client (cache, polling, retries), React
 * Router's routes, and the sign-in gate. Any 401 clears the key and returns
 * to the sign-in page with the server's message.
 */
import { useEffect, useState } from 'react';
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { BrowserRouter, Navigate, Route, Routes, useNavigate } from 'react-router';
import { ApiError, session, setUnauthorizedHandler } from './lib/api';
import { Layout } from './components/Layout';
import { SignIn } from './pages/SignIn';
import { SandboxesPage } from './pages/Sandboxes';
import { SandboxPage } from './pages/Sandbox';
import { SnapshotsPage, VolumesPage } from './pages/Resources';
import { TemplatesPage } from './pages/Templates';
import { DatabasesPage } from './pages/Databases';
import { DatabasePage } from './pages/Database';
import { UsagePage } from './pages/Usage';
import { AuditPage } from './pages/Audit';
import { NotFound } from './components/ErrorBox';

const noRetryOn = (err: unknown) =>
  err instanceof ApiError && err.status >= 400 && err.status < 500;

const client = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (count, err) => !noRetryOn(err) && count < 2,
      refetchOnWindowFocus: true,
      staleTime: 1000,
    },
  },
  queryCache: new QueryCache(),
  mutationCache: new MutationCache(),
});

function Gate({ children }: { children: React.ReactNode }) {
  const navigate = useNavigate();
  const [key, setKey] = useState(session.key());
  useEffect(() => {
    setUnauthorizedHandler((err) => {
      session.signOut(`Your key was refused (${err.code}: ${err.message}). Sign in again.`);
      client.clear();
      setKey(null);
      void navigate('/sign-in');
    });
  }, [navigate]);
  if (!key) return <Navigate to="/sign-in" replace />;
  return <>{children}</>;
}

export function App() {
  return (
    <QueryClientProvider client={client}>
      <BrowserRouter>
        <Routes>
          <Route path="/sign-in" element={<SignIn onSignedIn={() => client.clear()} />} />
          <Route
            element={
              <Gate>
                <Layout onSignOut={() => client.clear()} />
              </Gate>
            }
          >
            <Route index element={<Navigate to="/sandboxes" replace />} />
            <Route path="sandboxes" element={<SandboxesPage />} />
            <Route path="sandboxes/:id/:tab?" element={<SandboxPage />} />
            <Route path="snapshots" element={<SnapshotsPage />} />
            <Route path="templates" element={<TemplatesPage />} />
            <Route path="volumes" element={<VolumesPage />} />
            <Route path="databases" element={<DatabasesPage />} />
            <Route path="databases/:id" element={<DatabasePage />} />
            <Route path="usage" element={<UsagePage />} />
            <Route path="audit" element={<AuditPage />} />
            <Route path="*" element={<NotFound />} />
          </Route>
        </Routes>
      </BrowserRouter>
    </QueryClientProvider>
  );
}
