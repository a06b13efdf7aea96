import { createSocket } from "node:dgram";
import { once } from "node:events";

const TYPE_A = 1;
const CLASS_IN = 1;

/**
 * A DNS server on 127.0.0.1 (UDP) answering A queries for the names in `records` with their
 * IPv4 addresses, as Docker's embedded DNS answers a service's name with its replicas; any other
 * name is NXDOMAIN. Enough for nginx's resolver, nothing more (no TCP, no compression in queries).
 */
export async function startDnsResponder(records: Record<string, string[]>) {
  const socket = createSocket("udp4");
  socket.on("message", (query, sender) => {
    const answer = answerTo(query, records);
    if (answer !== null) socket.send(answer, sender.port, sender.address);
  });
  socket.bind(0, "127.0.0.1");
  await once(socket, "listening");
  return {
    port: socket.address().port,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function answerTo(query: Buffer, records: Record<string, string[]>): Buffer | null {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return null;
  const labels: string[] = [];
  let offset = 12;
  for (let length = query[offset] ?? 0; length > 0; length = query[offset] ?? 0) {
    labels.push(query.toString("ascii", offset + 1, offset + 1 + length));
    offset += 1 + length;
  }
  const questionEnd = offset + 5;
  if (questionEnd > query.length) return null;
  const type = query.readUInt16BE(offset + 1);
  const addresses = records[labels.join(".").toLowerCase()];
  const answers = type === TYPE_A ? (addresses ?? []) : [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // A response, authoritative, recursion desired and available; NXDOMAIN for an unknown name.
  header.writeUInt16BE(0x8580 | (addresses === undefined ? 3 : 0), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  const answerRecords = answers.map((address) => {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(1, 6);
    record.writeUInt16BE(4, 10);
    Buffer.from(address.split(".").map(Number)).copy(record, 12);
    return record;
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...answerRecords]);
}
