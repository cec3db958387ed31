import { getMessage, queryMessages, type Message } from '../../lib/store/messages';

/** The webhook's messages with their bodies, newest first: what a test reads back after recording. */
export async function recordedMessages(account: string, webhookId: string, limit: number): Promise<Message[]> {
  const { messages } = await queryMessages({ account, webhookId, limit });
  return Promise.all(messages.map(async (message) => (await getMessage(message))!));
}
