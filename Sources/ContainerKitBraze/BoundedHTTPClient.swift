import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one HTTP request with a wall-clock deadline and reads its answer with a hard size cap, so
/// neither a slow nor an endless (or highly compressed) answer can hold a delivery or grow memory.
///
/// The answer is taken chunk by chunk through a `URLSessionDataDelegate`; once more than
/// `maximumResponseBytes` arrived (or the declared `Content-Length` is larger) the task is cancelled.
/// The deadline runs on the injected clock, in a child task that cancels the request — structured, no
/// task outlives ``send(_:)``.
final class BoundedHTTPClient: Sendable {
    private final class TaskState: @unchecked Sendable {
        // Guarded by Delegate.tasks' lock.
        var body: [UInt8] = []
        var response: HTTPURLResponse?
        var overflow = false
        var continuation: CheckedContinuation<(HTTPURLResponse, [UInt8]), any Error>?
    }

    private final class Delegate: NSObject, URLSessionDataDelegate, Sendable {
        let maximumResponseBytes: Int
        let tasks = Mutex<[Int: TaskState]>([:])

        init(maximumResponseBytes: Int) { self.maximumResponseBytes = maximumResponseBytes }

        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            let limit = maximumResponseBytes
            let tooLarge = tasks.withLock { tasks -> Bool in
                guard let state = tasks[dataTask.taskIdentifier] else { return false }
                state.response = response as? HTTPURLResponse
                if response.expectedContentLength > Int64(limit) { state.overflow = true }
                return state.overflow
            }
            completionHandler(tooLarge ? .cancel : .allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let limit = maximumResponseBytes
            let tooLarge = tasks.withLock { tasks -> Bool in
                guard let state = tasks[dataTask.taskIdentifier], !state.overflow else { return false }
                if state.body.count + data.count > limit {
                    state.overflow = true
                    state.body = []
                    return true
                }
                state.body.append(contentsOf: data)
                return false
            }
            if tooLarge { dataTask.cancel() }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let limit = maximumResponseBytes
            guard let state = tasks.withLock({ $0.removeValue(forKey: task.taskIdentifier) }),
                let continuation = state.continuation
            else { return }
            if state.overflow {
                continuation.resume(
                    throwing: DeliveryError(.transport, "the answer is larger than \(limit) bytes; it was cut off")
                )
            } else if let error {
                if (error as? URLError)?.code == .cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if (error as? URLError)?.code == .timedOut {
                    continuation.resume(throwing: DeliveryError(.timeout, "the request timed out"))
                } else {
                    continuation.resume(
                        throwing: DeliveryError(
                            .transport,
                            "the request failed: \(error.localizedDescription.lowercased())"
                        )
                    )
                }
            } else if let response = state.response {
                continuation.resume(returning: (response, state.body))
            } else {
                continuation.resume(throwing: DeliveryError(.transport, "the server sent no http answer"))
            }
        }
    }

    private let session: URLSession
    private let delegate: Delegate
    private let deadline: Duration
    private let clock: DeliveryClock

    init(deadline: Duration, maximumResponseBytes: Int, clock: DeliveryClock) {
        self.deadline = deadline
        self.clock = clock
        delegate = Delegate(maximumResponseBytes: max(0, maximumResponseBytes))
        let configuration = URLSessionConfiguration.ephemeral
        // A backstop for an idle connection; the deadline below is what bounds a request. FoundationNetworking
        // counts whole seconds.
        let seconds = Double(max(deadline.components.seconds, 0) + 1)
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds * 2
        configuration.urlCache = nil
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends `request` and returns the answer, or throws ``DeliveryError`` (`.timeout` past the deadline,
    /// `.transport` for a broken, unreadable or oversized answer) or `CancellationError`.
    func send(_ request: URLRequest) async throws -> (HTTPURLResponse, [UInt8]) {
        let deadline = self.deadline
        let clock = self.clock
        return try await withThrowingTaskGroup(of: (HTTPURLResponse, [UInt8])?.self) { group in
            group.addTask { try await self.perform(request) }
            group.addTask {
                try await clock.sleep(deadline)
                throw DeliveryError(.timeout, "no complete answer within the \(deadline) deadline")
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let answer = next { return answer }
            }
            throw CancellationError()
        }
    }

    private func perform(_ request: URLRequest) async throws -> (HTTPURLResponse, [UInt8]) {
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        let state = TaskState()
        delegate.tasks.withLock { $0[id] = state }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                delegate.tasks.withLock { _ in state.continuation = continuation }
                if Task.isCancelled {
                    if delegate.tasks.withLock({ $0.removeValue(forKey: id) }) != nil {
                        continuation.resume(throwing: CancellationError())
                    }
                    return
                }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }
}
