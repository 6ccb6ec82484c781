import { Redis, type RedisOptions } from 'ioredis';
import { redactUrl } from '../log.js';
import { ConnectionCopies, type QueueConnectionExtras } from './queue-connection.js';

/**
 * A connection of queue mode to one Redis node. It knows its URL as it may be shown (the
 * password masked) and keeps the connections duplicated from it, so that a shutdown can drop
 * them all (see ConnectionCopies).
 */
export class QueueRedis extends Redis implements QueueConnectionExtras {
  readonly shownUrl: string;
  private readonly copies = new ConnectionCopies();

  constructor(url: string, options: RedisOptions) {
    super(url, options);
    this.shownUrl = redactUrl(url, { keepUser: true });
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return this.copies.keep(super.duplicate(override));
  }

  close(): Promise<void> {
    return this.copies.close(this);
  }

  disconnectAll(): void {
    this.copies.disconnectAll(this);
  }
}
