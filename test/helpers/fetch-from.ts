import { Agent, fetch, type RequestInit } from 'undici';

/** An answer, read to its end. */
export interface FetchedAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * A request sent from a loopback address of the test's choosing: every address of 127.0.0.0/8
 * reaches a server on 127.0.0.1, and each is a client of its own to the server's throttle of
 * failed authentication, which tells clients apart by remote address.
 */
export async function fetchFrom(address: string, url: string, init: Omit<RequestInit, 'dispatcher'> = {}): Promise<FetchedAnswer> {
  const dispatcher = new Agent({ localAddress: address });
  try {
    const res = await fetch(url, { redirect: 'manual', ...init, dispatcher });
    return { status: res.status, headers: res.headers as unknown as Headers, text: await res.text() };
  } finally {
    await dispatcher.close();
  }
}
