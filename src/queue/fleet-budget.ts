import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError } from '../errors.js';
import type { Logger } from '../log.js';
import { AUTO_SLOTS, PROBE_AFTER_MS, type RequestOutcome, type RequestSlots } from '../service/index.js';
import { ACQUIRE, ADAPT, LEAVE, RELEASE, RENEW } from './fleet-budget-scripts.js';
import type { RedisClient } from './queue-connection.js';

/** How long a worker's slots outlive its last word to Redis: a dead worker's come back after this. */
export const LEASE_MS = 10_000;

/** How long `auto`'s answered attempts wait to be sent together (an overload is sent at once). */
const OBSERVE_EVERY_MS = 20;

/** Grants a process takes from its list in one pop. */
const GRANTS_PER_POP = 64;

/** The scripts of fleet-budget-scripts.ts, as commands of the budgets' own connection. */
interface BudgetCommands {
  budgetAcquire(...args: (string | number)[]): Promise<[number, number]>;
  budgetRelease(...args: (string | number)[]): Promise<number>;
  budgetRenew(...args: (string | number)[]): Promise<[number, number]>;
  budgetLeave(...args: (string | number)[]): Promise<number>;
  budgetAdapt(...args: (string | number)[]): Promise<number>;
}

type ScriptName = keyof BudgetCommands;

/**
 * The fleet-wide request budgets of the runs a worker process scores: a run's --concurrency held
 * in Redis for all its workers together (see fleet-budget-scripts.ts), one per run generation.
 * Each request takes a slot with one script call and gives it back with another; a request that
 * finds none free is queued in Redis and woken when one is given back, through the process's
 * grants list, read by one blocking pop on a connection of its own. A process holds its slots
 * under a lease it renews every third of `leaseMs` while it holds or awaits any: a worker that
 * dies, or stays away from Redis longer, loses them to the others.
 */
export class FleetBudgets {
  /** Names this process in the budgets: its holders and its grants list. */
  private readonly token = randomBytes(8).toString('hex');
  /** The budgets holding or awaiting slots now, by state key: renewed, and woken by grants. */
  private readonly active = new Map<string, FleetSlots>();
  private connections?: { commands: RedisClient & BudgetCommands; blocking: RedisClient };
  private renewal?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    readonly log: Logger,
    readonly leaseMs: number = LEASE_MS,
  ) {}

  /** The key of this process's grants list; entries say which of its requests got a slot. */
  private get grantsKey(): string {
    return `${this.prefix}:budget-grants:${this.token}`;
  }

  /** The budget of one run generation (`id`): `concurrency` slots for the fleet, or `auto`'s shared level. */
  budget(id: string, concurrency: number | 'auto'): FleetSlots {
    const state = `${this.prefix}:budget:${id}`;
    // One per budget while it holds or awaits slots: grants find their budget by its key.
    return this.active.get(state) ?? new FleetSlots(this, state, concurrency);
  }

  /** A new holder name for this process. */
  holder(epoch: number): string {
    return `${this.token}/${epoch}`;
  }

  /** Calls a budget script on `state`'s keys with the common arguments, then `args`. */
  call<N extends ScriptName>(name: N, state: string, holder: string, initial: number, ...args: (string | number)[]): ReturnType<BudgetCommands[N]> {
    if (this.closed) return Promise.reject(new AbortedError('worker shutting down')) as ReturnType<BudgetCommands[N]>;
    const { commands } = this.connect();
    const keys = [state, `${state}:held`, `${state}:leases`, `${state}:queue`];
    return commands[name](...keys, `${this.prefix}:budget-grants:`, this.leaseMs, holder, initial, ...args) as ReturnType<BudgetCommands[N]>;
  }

  /** Keeps a budget renewed and reachable by grants while it holds or awaits slots. */
  track(budget: FleetSlots): void {
    this.active.set(budget.state, budget);
  }

  /** Opens the budgets' connections on first use: most worker processes never score a run with a budget. */
  private connect(): NonNullable<FleetBudgets['connections']> {
    if (this.connections) return this.connections;
    const commands = this.redis.duplicate() as RedisClient & BudgetCommands;
    const blocking = this.redis.duplicate();
    // The worker's own connection says when Redis is away (RedisWatch); these would say it again.
    for (const c of [commands, blocking]) c.on('error', () => {});
    const scripts = { budgetAcquire: ACQUIRE, budgetRelease: RELEASE, budgetRenew: RENEW, budgetLeave: LEAVE, budgetAdapt: ADAPT };
    for (const [name, lua] of Object.entries(scripts)) commands.defineCommand(name, { numberOfKeys: 4, lua });
    this.connections = { commands, blocking };
    void this.readGrants(blocking);
    this.renewal = setInterval(() => this.renew(), this.leaseMs / 3);
    this.renewal.unref();
    return this.connections;
  }

  /** Hands each slot granted to this process to the budget whose request waits for it. */
  private async readGrants(blocking: RedisClient): Promise<void> {
    while (!this.closed) {
      let popped: [string, string[]] | null;
      try {
        popped = await blocking.blmpop(0, 1, this.grantsKey, 'LEFT', 'COUNT', GRANTS_PER_POP);
      } catch (err) {
        if (this.closed) return;
        this.log.warn({ err }, 'could not read the slots granted by the fleet budgets; trying again');
        await sleep(1_000);
        continue;
      }
      for (const entry of popped?.[1] ?? []) {
        const cut = entry.indexOf('\n');
        const holder = entry.slice(0, cut);
        const state = entry.slice(cut + 1);
        const budget = this.active.get(state);
        // Only a budget that awaits a slot is granted one; a stray grant goes back at once.
        if (budget) budget.granted(holder);
        else this.call('budgetRelease', state, holder, 1).catch((err: unknown) => this.log.warn({ err }, 'could not give back a slot of a fleet budget'));
      }
    }
  }

  private renew(): void {
    for (const [state, budget] of this.active) {
      if (budget.idle) this.active.delete(state);
      else budget.renew();
    }
  }

  /** Gives back every slot this process holds and stops; requests still waiting fail (AbortedError). */
  async close(): Promise<void> {
    if (this.closed) return;
    const connections = this.connections;
    const held = [...this.active.values()];
    if (connections?.commands.status === 'ready') await Promise.all(held.map((l) => l.leave()));
    this.closed = true;
    clearInterval(this.renewal);
    for (const l of held) l.stop();
    if (!connections) return;
    connections.blocking.disconnect();
    if (connections.commands.status === 'ready') await connections.commands.quit();
    else connections.commands.disconnect();
  }
}

/** A request waiting for a slot of the budget. */
interface Waiter {
  /** The holder its request asks, or is queued in Redis, under. */
  holder: string;
  /** An acquire call of it is out: its answer, not `lost`, decides what it does next. */
  asking: boolean;
  /** Set once it got a slot or stopped waiting. */
  settled: boolean;
  resolve(holder: string): void;
  reject(err: Error): void;
}

/**
 * One run generation's fleet-wide budget as this process sees it: a RequestSlots whose slots are
 * shared through Redis with every worker scoring the run.
 */
export class FleetSlots implements RequestSlots {
  private epoch = 0;
  private holder: string;
  /** Slots held and requests queued in Redis, per holder: what this process owes the budget. */
  private readonly owed = new Map<string, number>();
  private readonly waiters: Waiter[] = [];
  private level: number;
  private readonly initial: number;
  private observations: (string | number)[] = [];
  private sending?: NodeJS.Timeout | 'now';

  constructor(
    private readonly budgets: FleetBudgets,
    /** The budget's state key; its other keys are named after it. */
    readonly state: string,
    private readonly asked: number | 'auto',
  ) {
    this.holder = budgets.holder(this.epoch);
    this.initial = asked === 'auto' ? Math.min(AUTO_SLOTS.initial, AUTO_SLOTS.max) : asked;
    this.level = this.initial;
  }

  /** The fleet's slots as last heard from Redis. */
  get concurrency(): number {
    return this.level;
  }

  /** True when this process neither holds nor awaits a slot of the budget. */
  get idle(): boolean {
    return this.waiters.length === 0 && [...this.owed.values()].every((n) => n === 0);
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const holder = await this.take(signal);
    try {
      return await fn();
    } finally {
      this.give(holder);
    }
  }

  observe(outcome: RequestOutcome, ms?: number): void {
    if (this.asked !== 'auto' || outcome === 'failed') return;
    this.observations.push(outcome, ms ?? '', Date.now());
    if (outcome === 'overloaded') this.send();
    else this.sending ??= setTimeout(() => this.send(), OBSERVE_EVERY_MS);
  }

  /** Sends the attempts observed so far to the shared level, one call at a time. */
  private send(): void {
    if (this.sending === 'now' || this.observations.length === 0) return;
    clearTimeout(this.sending);
    this.sending = 'now';
    const batch = this.observations;
    this.observations = [];
    this.budgets
      .call('budgetAdapt', this.state, this.holder, this.initial, AUTO_SLOTS.min, AUTO_SLOTS.max, PROBE_AFTER_MS, ...batch)
      .then(
        (level) => this.heard(level),
        (err: unknown) => this.log.warn({ err }, 'could not tell the fleet budget how requests went'),
      )
      .finally(() => {
        this.sending = undefined;
        if (this.observations.length > 0) this.send();
      });
  }

  private get log(): Logger {
    return this.budgets.log;
  }

  private heard(level: number): void {
    this.level = level;
  }

  private take(signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) return Promise.reject(new AbortedError('waiting for a request slot: cancelled', signal.reason));
    this.budgets.track(this);
    return new Promise<string>((resolve, reject) => {
      // Its entry, if queued in Redis, stays there: the slot it brings is given back (see granted).
      const stop = () => this.settle(waiter, new AbortedError('waiting for a request slot: cancelled', signal?.reason));
      const waiter: Waiter = {
        holder: this.holder,
        asking: false,
        settled: false,
        resolve: (holder) => {
          signal?.removeEventListener('abort', stop);
          resolve(holder);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', stop);
          reject(err);
        },
      };
      signal?.addEventListener('abort', stop, { once: true });
      // Listed before it asks: the grant of its queued entry may be read before the answer that queued it.
      this.waiters.push(waiter);
      void this.ask(waiter);
    });
  }

  /** Asks Redis for a slot for `waiter`: it gets one, or waits in the queue for a grant. */
  private async ask(waiter: Waiter): Promise<void> {
    while (!waiter.settled) {
      const holder = this.holder;
      // A holder's lease is made only while this process owes nothing under it; a lease gone
      // while it does means its slots went back to the fleet (see lost).
      const join = (this.owed.get(holder) ?? 0) === 0 ? 1 : 0;
      this.owe(holder, 1);
      waiter.holder = holder;
      waiter.asking = true;
      let taken: number;
      try {
        [taken, this.level] = await this.budgets.call('budgetAcquire', this.state, holder, this.initial, join);
      } catch (err) {
        waiter.asking = false;
        this.owe(holder, -1);
        this.settle(waiter, err as Error);
        return;
      }
      if (taken === -1) {
        this.owe(holder, -1);
        this.lost(holder);
        waiter.asking = false;
        continue;
      }
      waiter.asking = false;
      // A slot taken for a request that got one meanwhile (a grant meant for another's queued
      // entry), or stopped waiting, goes to the next request waiting here, else back.
      if (taken === 1 && !this.settle(waiter, holder)) this.granted(holder);
      // Queued: it waits in the list for a grant (or, settled meanwhile, its grant goes back).
      return;
    }
  }

  /** Ends a request's wait with a slot of `holder`, or an error; false when it had ended already. */
  private settle(waiter: Waiter, outcome: string | Error): boolean {
    if (waiter.settled) return false;
    waiter.settled = true;
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    if (typeof outcome === 'string') waiter.resolve(outcome);
    else waiter.reject(outcome);
    return true;
  }

  /**
   * A slot granted to a request this process queued under `holder`, or one its request no longer
   * needs: the first request waiting under it takes it; with none, it goes back. Slots are alike:
   * each request waiting brings one (taken at once, or its queued entry's grant), so handing each
   * to whoever waits first, and giving one back only when nobody waits, leaves none waiting for
   * ever, whatever order the answers and grants are read in.
   */
  granted(holder: string): void {
    const waiter = this.waiters.find((w) => w.holder === holder);
    if (!waiter || !this.settle(waiter, holder)) this.give(holder);
  }

  private give(holder: string): void {
    this.owe(holder, -1);
    this.budgets.call('budgetRelease', this.state, holder, this.initial).then(
      (level) => this.heard(level),
      (err: unknown) => {
        // Closed: leaving gave back every slot already.
        if (err instanceof AbortedError) return;
        // Redis still counts the slot: the holder is let go, and its lease, no longer renewed, returns it.
        this.log.warn({ err }, 'could not give back a slot of a fleet budget; its lease will return it');
        this.lost(holder);
      },
    );
  }

  private owe(holder: string, n: number): void {
    const owed = (this.owed.get(holder) ?? 0) + n;
    if (owed > 0) this.owed.set(holder, owed);
    else this.owed.delete(holder);
  }

  /** Extends this process's lease; a lease found gone is taken as lost. */
  renew(): void {
    const holder = this.holder;
    this.budgets.call('budgetRenew', this.state, holder, this.initial).then(
      ([alive, level]) => {
        this.heard(level);
        if (alive === 0 && (this.owed.get(holder) ?? 0) > 0) this.lost(holder);
      },
      (err: unknown) => this.log.warn({ err }, 'could not renew the lease of a fleet budget'),
    );
  }

  /**
   * The lease of `holder` is gone (this process was away from Redis longer than a lease) or let
   * go: its slots are back in the fleet's hands, so the requests queued under it ask again as a
   * new holder, and those in flight give back nothing when they end.
   */
  private lost(holder: string): void {
    if (holder === this.holder) {
      this.log.warn({ budget: this.state }, 'a fleet budget lease was lost: its slots went back to the fleet');
      this.holder = this.budgets.holder(++this.epoch);
      this.owed.delete(holder);
    }
    for (const w of this.waiters) if (w.holder !== this.holder && !w.asking) void this.ask(w);
  }

  /** Gives back every slot of this process at once. */
  async leave(): Promise<void> {
    await this.budgets.call('budgetLeave', this.state, this.holder, this.initial).catch(() => undefined);
  }

  /** Fails the requests still waiting: the worker is shutting down. */
  stop(): void {
    clearTimeout(this.sending === 'now' ? undefined : this.sending);
    for (const w of [...this.waiters]) this.settle(w, new AbortedError('worker shutting down'));
  }
}
