import './local/node-version-warning';
import './cli-output';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, formatEther, http, isAddress, parseEther, parseUnits, type Address, type Hash } from 'viem';
import { DevCollectibles, DevToken, Forwarder } from './dev-contracts.generated';
import { DEFAULT_DEV_CHAIN_ID, DEFAULT_DEV_CHAIN_PORT } from './local/dev-chain';
import { QUARANTINE_USAGE, quarantineCommand, QuarantineUsageError } from './quarantine-commands';

const DEFAULT_RPC = `http://127.0.0.1:${process.env.DEV_CHAIN_PORT || DEFAULT_DEV_CHAIN_PORT}`;

const USAGE = `Usage: npm run chain -- <command> [options]

Transactions on the dev chain that npm start runs (anvil), to watch them become notifications.
Every command waits for its block and prints the transaction hash and block number.

  accounts                                         the funded dev accounts and their balances
  send --to 0x.. --value 1.5                       send ETH (value in ETH)
  deploy-token                                     deploy an ERC-20 (Dev Token, DEV, 18 decimals; 1 000 000 to --from)
  transfer-token --token 0x.. --to 0x.. --amount 10   transfer DEV (amount in tokens)
  forward --to 0x.. --value 0.5 [--forwarder 0x..] send ETH through a contract: an internal transaction
                                                   (deploys a forwarder first when none is given)
  mint-nft --to 0x.. [--collection 0x..]           mint an ERC-721 (deploys a collection first when none is given)
${QUARANTINE_USAGE}

Options:
  --from 0x..    the sender, one of the dev accounts (default: the first)
  --rpc URL      the dev chain (default ${DEFAULT_RPC}; DEV_CHAIN_PORT as for npm start)
  -h, --help     this text`;

class UsageError extends Error {}

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      to: { type: 'string' },
      from: { type: 'string' },
      value: { type: 'string' },
      amount: { type: 'string' },
      token: { type: 'string' },
      forwarder: { type: 'string' },
      collection: { type: 'string' },
      rpc: { type: 'string', default: DEFAULT_RPC },
      chain: { type: 'string' },
      all: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command] = positionals;
  if (values.help || !command) return void process.stdout.write(`${USAGE}\n`);
  if (command === 'quarantine') {
    const chainId = values.chain ?? (process.env.DEV_CHAIN_ID || DEFAULT_DEV_CHAIN_ID);
    return quarantineCommand(positionals.slice(1), { all: values.all!, chainId, devChainRpc: values.rpc! });
  }
  const transport = http(values.rpc, { retryCount: 0 });
  const reader = createPublicClient({ transport });
  const chainId = await reader.getChainId().catch(() => {
    throw new Error(`no dev chain at ${values.rpc}: is npm start running (with its dev chain), or is --rpc right?`);
  });
  const chain = defineChain({ id: chainId, name: 'dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [values.rpc!] } } });
  const accounts = await createWalletClient({ chain, transport }).getAddresses();
  const from: Address = values.from ? address(values.from, '--from') : accounts[0]!;
  const wallet = createWalletClient({ account: from, chain, transport });
  const mined = async (hash: Hash, what: string) => {
    const receipt = await reader.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    process.stdout.write(`${what}\n  transaction ${hash} in block ${receipt.blockNumber}\n`);
    return receipt;
  };
  const deploy = async (contract: typeof DevToken | typeof Forwarder | typeof DevCollectibles, what: string) => {
    const receipt = await mined(await wallet.deployContract({ abi: contract.abi, bytecode: contract.bytecode }), `deployed ${what}`);
    process.stdout.write(`  address ${receipt.contractAddress}\n`);
    return receipt.contractAddress!;
  };

  switch (command) {
    case 'accounts':
      for (const account of accounts) process.stdout.write(`${account}  ${formatEther(await reader.getBalance({ address: account }))} ETH\n`);
      return;
    case 'send': {
      const to = address(values.to, '--to');
      await mined(await wallet.sendTransaction({ to, value: ether(values.value) }), `sent ${values.value} ETH from ${from} to ${to}`);
      return;
    }
    case 'deploy-token':
      await deploy(DevToken, 'Dev Token (DEV)');
      return;
    case 'transfer-token': {
      const [token, to] = [address(values.token, '--token'), address(values.to, '--to')];
      const amount = positive(values.amount, '--amount', (text) => parseUnits(text, 18));
      await mined(await wallet.writeContract({ address: token, abi: DevToken.abi, functionName: 'transfer', args: [to, amount] }), `transferred ${values.amount} DEV to ${to}`);
      return;
    }
    case 'forward': {
      const to = address(values.to, '--to');
      const value = ether(values.value);
      const forwarder = values.forwarder ? address(values.forwarder, '--forwarder') : await deploy(Forwarder, 'a forwarder');
      await mined(
        await wallet.writeContract({ address: forwarder, abi: Forwarder.abi, functionName: 'forward', args: [to], value }),
        `sent ${values.value} ETH to ${to} through the forwarder ${forwarder} (an internal transaction)`,
      );
      return;
    }
    case 'mint-nft': {
      const to = address(values.to, '--to');
      const collection = values.collection ? address(values.collection, '--collection') : await deploy(DevCollectibles, 'a collection');
      await mined(await wallet.writeContract({ address: collection, abi: DevCollectibles.abi, functionName: 'mint', args: [to] }), `minted an NFT of ${collection} to ${to}`);
      return;
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

function address(value: string | undefined, option: string): Address {
  if (!value) throw new UsageError(`${option} is required`);
  if (!isAddress(value, { strict: false })) throw new UsageError(`${option} must be an address (0x and 40 hex digits), got '${value}'`);
  return value;
}

const ether = (value: string | undefined) => positive(value, '--value', parseEther);

function positive(value: string | undefined, option: string, parse: (text: string) => bigint): bigint {
  if (!value) throw new UsageError(`${option} is required`);
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`${option} must be a positive decimal number, got '${value}'`);
  return parse(value);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const usage = error instanceof UsageError || error instanceof QuarantineUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`${(error as Error).message.split('\n')[0]}${usage ? `\n\n${USAGE}` : ''}\n`);
  process.exit(1);
});
