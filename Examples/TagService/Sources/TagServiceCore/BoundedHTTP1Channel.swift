import ContainerKit
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1 connections with the bounds a service facing the internet needs beyond its idle timeout
/// (issue 38: 48 connections dripping a byte every 2 s held every slot of `--max-connections 32` for as long as
/// they liked, and SIGTERM waited for them):
///
/// - **A request deadline** (`--request-timeout`): a request must be read whole — headers and body — within this
///   time of its first byte. Hummingbird's idle timer starts again with each part of a body, so a client sending
///   a byte now and then kept its connection, and its place among the connections, forever. Past the deadline
///   the request is answered `408 request_timeout` (unless an answer has begun) and the connection is closed.
/// - **A bound on the wait of a graceful shutdown** (`--shutdown-timeout`): when the server stops accepting, a
///   connection whose request is still being read or answered this long after is closed, answered
///   `503 shutting_down` if its answer has not begun. Such a request was not acknowledged (the client retries);
///   an acknowledged one was durable before its answer was written, so nothing acknowledged is lost. Then the
///   shutdown goes on: sessions saved, records drained.
///
/// Hummingbird's own timer still closes a connection that sends nothing for `--idle-timeout`, before and between
/// requests.
struct BoundedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// The connections' time limits.
    struct Limits: Sendable {
        /// A connection that sends nothing for this long is closed (Hummingbird's idle timeout).
        var idleTimeout: Duration
        /// A request must be read whole within this time of its first byte.
        var requestTimeout: Duration
        /// After the server stopped accepting, a request still in progress after this long is cut.
        var shutdownTimeout: Duration
    }

    /// Why a connection was cut, for the metrics.
    enum Cut: String, Sendable {
        case requestTimeout = "request_timeout"
        case shutdown
    }

    let responder: HTTPChannelHandler.Responder
    let limits: Limits
    /// Called each time a connection is cut.
    let onCut: @Sendable (Cut) -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let deadlines = RequestDeadlineHandler(limits: limits, onCut: onCut)
        do {
            // First in the pipeline: it sees the bytes of a request before they are parsed, and the server's
            // quiesce event before Hummingbird's connection handler takes it.
            try channel.pipeline.syncOperations.addHandler(RequestBytesHandler(deadlines: deadlines), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let bound = NIOLoopBound(deadlines, eventLoop: channel.eventLoop)
        let http = HTTP1Channel(
            responder: responder,
            configuration: .init(
                additionalChannelHandlers: [bound.value],
                idleTimeout: .nanoseconds(limits.idleTimeout.nanosecondCount)
            )
        )
        return http.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

/// The bytes side of ``RequestDeadlineHandler``: the first bytes of a request start its deadline, and the
/// server's quiesce event (graceful shutdown) starts the shutdown bound.
final class RequestBytesHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadlines: RequestDeadlineHandler

    init(deadlines: RequestDeadlineHandler) { self.deadlines = deadlines }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if unwrapInboundIn(data).readableBytes > 0 { deadlines.bytesArrived() }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { deadlines.quiesce() }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Follows each request of a connection from its first byte (``RequestBytesHandler``) or its head to its end,
/// and its answer from head to end, and cuts the connection at the request deadline or the shutdown bound
/// (``BoundedHTTP1Channel``). It sits after the HTTP codec, so it writes its own `408` and `503` answers.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// No request in progress: its first byte starts the deadline.
        case waiting
        /// A request is being read: the deadline runs.
        case reading
        /// A request was read whole and is being answered.
        case answering
    }

    private let limits: BoundedHTTP1Channel.Limits
    private let onCut: @Sendable (BoundedHTTP1Channel.Cut) -> Void
    private var context: ChannelHandlerContext?
    private var phase = Phase.waiting
    /// Whether an answer's head was written and its end not yet.
    private var answerStarted = false
    /// Whether the request being read was answered already (a 413 before its body was read).
    private var answeredEarly = false
    private var deadline: Scheduled<Void>?
    private var shutdownBound: Scheduled<Void>?

    init(limits: BoundedHTTP1Channel.Limits, onCut: @escaping @Sendable (BoundedHTTP1Channel.Cut) -> Void) {
        self.limits = limits
        self.onCut = onCut
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            // A request parsed from bytes that came with the previous one's (pipelined) starts here.
            if phase == .waiting { startReading() }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
            phase = .answering
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head:
            answerStarted = true
        case .body:
            break
        case .end:
            answerStarted = false
            // An early answer (a 413 before the body was read) leaves the deadline on the rest of the body.
            if phase == .answering { phase = .waiting } else if phase == .reading { answeredEarly = true }
        }
        context.write(data, promise: promise)
    }

    /// Bytes of a request arrived.
    func bytesArrived() {
        if phase == .waiting { startReading() }
    }

    /// The server stopped accepting (graceful shutdown): what is still in progress after the bound is cut.
    func quiesce() {
        guard shutdownBound == nil, let context else { return }
        shutdownBound = context.eventLoop.assumeIsolated().scheduleTask(
            in: .nanoseconds(limits.shutdownTimeout.nanosecondCount)
        ) {
            self.shutdownBound = nil
            self.cut(.shutdown)
        }
    }

    private func startReading() {
        guard let context else { return }
        phase = .reading
        answeredEarly = false
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(
            in: .nanoseconds(limits.requestTimeout.nanosecondCount)
        ) {
            self.deadline = nil
            if self.phase == .reading { self.cut(.requestTimeout) }
        }
    }

    private func cancelTimers() {
        deadline?.cancel()
        deadline = nil
        shutdownBound?.cancel()
        shutdownBound = nil
    }

    /// Answers the request in progress, unless its answer has begun, and closes the connection.
    private func cut(_ reason: BoundedHTTP1Channel.Cut) {
        guard let context, context.channel.isActive else { return }
        cancelTimers()
        onCut(reason)
        if !answerStarted && !answeredEarly && phase != .waiting {
            let error =
                switch reason {
                case .requestTimeout:
                    APIError(
                        .requestTimeout,
                        "the request was not received whole within \(Self.seconds(limits.requestTimeout)) s"
                    )
                case .shutdown:
                    APIError(.shuttingDown, "the service is shutting down; the request was not acknowledged, retry")
                }
            let body = ByteBuffer(bytes: error.jsonBytes)
            let head = HTTPResponse(
                status: error.status,
                headerFields: [
                    .contentType: "application/json; charset=utf-8", .contentLength: "\(body.readableBytes)",
                    .connection: "close",
                ]
            )
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)" : "\(Double(seconds) + Double(attoseconds) / 1e18)"
    }
}
