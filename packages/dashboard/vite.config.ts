import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Served by the control plane at `/`; `npm run dev -w packages/dashboard` proxies the API
// of a platform on WARREN_API (default http://127.0.0.1:8080) for development.
const api = process.env.WARREN_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  base: '/',
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 800 },
  server: { proxy: { '/v1': { target: api, ws: true } } },
});
