import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';
import { ConnectionCopies, type QueueConnectionExtras } from './queue-connection.js';

/**
 * A connection of queue mode to a Redis Cluster (REDIS_URL `redis-cluster://…`), which BullMQ
 * takes as it takes one node. Like QueueRedis, it knows its URL as it may be shown and keeps
 * the connections duplicated from it, so that a shutdown can drop them all.
 */
export class QueueCluster extends Cluster implements QueueConnectionExtras {
  private readonly copies = new ConnectionCopies();
  private pinging = false;

  constructor(
    seeds: ClusterNode[],
    options: ClusterOptions,
    readonly shownUrl: string,
  ) {
    super(seeds, options);
    // An idle cluster connection does not see the cluster go: ioredis reconnects only once no node
    // is left in its pool, and nodes it never used stay there. So a node that goes is asked about
    // (a PING, one at a time): when the cluster is away, that fails the nodes left, and the
    // connection reconnects and says so (its status, 'error', then 'ready' once back), as a
    // connection to one node does by itself. RedisWatch and the shutdowns go by those.
    this.on('-node', () => this.checkNodes());
  }

  private checkNodes(): void {
    if (this.pinging || this.status !== 'ready') return;
    this.pinging = true;
    this.ping()
      .catch(() => undefined) // what the PING finds is told by the connection's events
      .finally(() => (this.pinging = false));
  }

  override duplicate(overrideStartupNodes?: ClusterNode[], overrideOptions?: ClusterOptions): Cluster {
    return this.copies.keep(super.duplicate(overrideStartupNodes, overrideOptions));
  }

  close(): Promise<void> {
    return this.copies.close(this);
  }

  disconnectAll(): void {
    this.copies.disconnectAll(this);
  }
}
