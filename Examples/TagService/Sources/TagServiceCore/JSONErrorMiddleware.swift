import ContainerKit
import Hummingbird

/// Answers every error the router or a handler throws as JSON, like the service's own errors:
/// `{"error": {"code", "message"}}` — a 404 for an unknown path, a 405, a 500 — instead of an empty body.
/// The message names the HTTP status only, never a server path or an internal error's text.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            return Self.response(status: error.status)
        } catch {
            return Self.response(status: .internalServerError)
        }
    }

    static func response(status: HTTPResponse.Status) -> Response {
        var error = ValueMap()
        let code: String
        switch status {
        case .notFound: code = "not_found"
        case .methodNotAllowed: code = "method_not_allowed"
        case .internalServerError: code = "internal_error"
        default: code = "http_\(status.code)"
        }
        error["code"] = .string(code)
        error["message"] = .string(status == .notFound ? "no such endpoint" : status.reasonPhrase.lowercased())
        return Response.json(["error": .object(error)], status: status)
    }
}
