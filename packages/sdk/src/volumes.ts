/** Named persistent volumes; attach them with `Sandbox.create({ volumes: [...] })`. */
import type { Volume } from '@warren/protocol';
import { HttpClient } from './client';
import type { ConnectionOptions } from './config';

const path = (name: string) => `/v1/volumes/${encodeURIComponent(name)}`;

export const Volumes = {
  /** Creates a volume of sizeMb MiB (its size limit). */
  create(name: string, sizeMb: number, opts: ConnectionOptions = {}): Promise<Volume> {
    return new HttpClient(opts).json('POST', '/v1/volumes', {
      json: { name, size_mb: sizeMb },
    });
  },

  async list(opts: ConnectionOptions = {}): Promise<Volume[]> {
    return (await new HttpClient(opts).json<{ items: Volume[] }>('GET', '/v1/volumes')).items;
  },

  get(name: string, opts: ConnectionOptions = {}): Promise<Volume> {
    return new HttpClient(opts).json('GET', path(name));
  },

  /** Deletes a volume and its data; fails with VOLUME_IN_USE while a sandbox holds it. */
  async delete(name: string, opts: ConnectionOptions = {}): Promise<void> {
    await new HttpClient(opts).json('DELETE', path(name));
  },
};
