// npm run bench:profile's owners of a CPU sample (bench/perf-owners.ts), on stacks as perf
// script prints them.
import t from 'tap'
import { OTHER, ownerOf, samplesByOwner } from '../perf-owners.ts'

const map = '(/tmp/perf-1.map)'
const node = '(/usr/bin/node)'
const kernel = '([kernel.kallsyms])'
const libc = '(/usr/lib/x86_64-linux-gnu/libc.so.6)'
const SEND = 'kernel: socket send (on loopback the receiver\'s side runs in it)'
const HTTP = 'Node\'s HTTP server, streams and sockets'

t.test('a builtin is charged to the innermost JavaScript with an owner; Node\'s modules pass it up', async (t) => {
  t.equal(ownerOf([
    `Builtins_KeyedLoadIC_Megamorphic ${node}`,
    `JS:*around file:///srv/dist/src/sites/spatial.js:100:11 ${map}`,
    `JS:*preHandlerCallbackInner /srv/node_modules/fastify/lib/handle-request.js:171:34 ${map}`
  ]), 'the search')
  t.equal(ownerOf([
    `v8::internal::String::WriteToFlat<unsigned char> ${node}`,
    `node::Buffer::(anonymous namespace)::SlowByteLengthUtf8 ${node}`,
    `JS:*byteLength node:buffer:770:20 ${map}`,
    `JS:*write /srv/node_modules/sonic-boom/index.js:306:16 ${map}`,
    `JS:*flush file:///srv/dist/src/http/access-log.js:40:19 ${map}`
  ]), 'access line (made and written)', 'Buffer.byteLength of the access lines')
  t.equal(ownerOf([
    `RegExp:[^\\t\\x20-\\x7e\\x80-\\xff] ${map}`,
    `JS:*processHeader node:_http_outgoing:546:23 ${map}`,
    `JS:*handler file:///srv/dist/src/routes/sites.js:54:8 ${map}`
  ]), HTTP)
  t.equal(ownerOf([`JS:*authenticate file:///srv/dist/src/routes/partner-api.js:58:40 ${map}`]),
    'the service\'s hooks and routes')
  t.equal(ownerOf([`JS:*find /srv/node_modules/find-my-way/index.js:618:39 ${map}`]), 'Fastify and its router')
})

t.test('the collector, digests and zlib wherever they are called from', async (t) => {
  t.equal(ownerOf([
    `v8::internal::Scavenger::ScavengeObject ${node}`,
    `v8::internal::Heap::CollectGarbage ${node}`,
    `JS:*around file:///srv/dist/src/sites/spatial.js:100:11 ${map}`
  ]), 'the collector')
  t.equal(ownerOf([
    `sha256_block_data_order_avx2 ${node}`,
    `EVP_Digest ${node}`,
    `node::crypto::Hash::OneShotDigest ${node}`,
    `JS:*hash node:internal/crypto/hash:221:14 ${map}`,
    `JS:*byToken file:///srv/dist/src/partners/directory.js:10:3 ${map}`
  ]), 'digests (token SHA-256, ETag SHA-1)')
  t.equal(ownerOf([`longest_match ${node}`, `deflate_fast ${node}`, `JS:*zlibBufferSync node:zlib:153:25 ${map}`]),
    'compression (zlib)')
})

t.test('kernel samples by the system call under them; native code without JavaScript', async (t) => {
  t.equal(ownerOf([
    `_raw_spin_unlock_irqrestore ${kernel}`,
    `sock_def_readable ${kernel}`,
    `tcp_rcv_established ${kernel}`,
    `tcp_sendmsg ${kernel}`,
    `do_writev ${kernel}`,
    `writev ${node}`
  ]), SEND)
  t.equal(ownerOf([`copy_user_enhanced_fast_string ${kernel}`, `tcp_recvmsg ${kernel}`, `ksys_read ${kernel}`]),
    'kernel: reads (the requests; libuv\'s wake-ups)')
  t.equal(ownerOf([
    `_copy_from_iter ${kernel}`,
    `tcp_sendmsg_locked ${kernel}`,
    `tcp_sendmsg ${kernel}`,
    `sock_write_iter ${kernel}`,
    `vfs_writev ${kernel}`,
    `do_writev ${kernel}`,
    `writev ${libc}`,
    `uv__write ${node}`
  ]), SEND, 'a socket\'s writev is not the log\'s write')
  t.equal(ownerOf([
    `ext4_file_write_iter ${kernel}`, `vfs_write ${kernel}`, `ksys_write ${kernel}`, `uv__fs_work ${node}`
  ]), 'kernel: log write')
  t.equal(ownerOf([`do_epoll_wait ${kernel}`]), 'kernel: epoll')
  t.equal(ownerOf([`some_irq_work ${kernel}`]), 'kernel: other')
  t.equal(ownerOf([
    `llhttp__internal_execute ${node}`,
    `node::(anonymous namespace)::Parser::Execute ${node}`,
    `uv__read ${node}`
  ]), HTTP)
  t.equal(ownerOf([`__memmove_avx512_unaligned_erms ${libc}`]), OTHER)
  t.equal(ownerOf([
    `malloc ${libc}`,
    `v8::internal::Factory::NewFixedArray ${node}`,
    `uv__io_poll ${node}`,
    `uv_run ${node}`,
    `node::SpinEventLoopInternal ${node}`,
    `node::Start ${node}`
  ]), OTHER, 'the event loop at the root of a stack does not make it Node\'s HTTP')
  t.equal(ownerOf([
    `v8::internal::compiler::PipelineImpl::OptimizeGraph ${node}`,
    `node::(anonymous namespace)::PlatformWorkerThread ${node}`
  ]), 'V8\'s compilers (helper thread)')
})

t.test('samples of perf script\'s output, counted by owner', async (t) => {
  const script = [
    'node  5970 ',
    `\t          16d8a7 JS:*around file:///srv/dist/src/sites/spatial.js:100:11 ${map}`,
    `\t          16d8a8 JS:*findNearby file:///srv/dist/src/sites/dataset.js:162:27 ${map}`,
    '',
    'node  5970 ',
    `\t          afab52 tcp_sendmsg ${kernel}`,
    '',
    'node  5970 ',
    `\t          afab53 JS:*around file:///srv/dist/src/sites/spatial.js:100:11 ${map}`,
    ''
  ].join('\n')
  t.same([...samplesByOwner(script)], [['the search', 2], [SEND, 1]])
})
