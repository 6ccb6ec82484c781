import { Job, type Queue } from 'bullmq';

/** The job of this id on a queue, as Redis holds it now; undefined when it is gone (removed, or never added). */
export async function findJob(queue: Queue, id: string): Promise<Job | undefined> {
  return Job.fromId(queue, id);
}
