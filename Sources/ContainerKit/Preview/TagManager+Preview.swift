public import Foundation
import Synchronization

extension TagManager {
    /// Handles a GTM preview URL: enters preview of the draft it names, or exits preview.
    ///
    /// Entering fetches the draft from ``LifecycleConfiguration/preview`` in ``run()`` (which must be running;
    /// without it, await ``enterPreview(_:)`` instead) and makes it the
    /// live version of its container ID (`gtm_debug=x` also sets ``isDebugMode``); the live version comes
    /// back with the exit URL, which is honoured only for the container in preview. Previewing a second
    /// container returns the first one to its live version. Refreshes of a container in preview update the
    /// version that exiting restores, not the draft.
    ///
    /// ```swift
    /// manager.preview(url: "tagmanager.c.com.example.app://preview/p?id=GTM-XXXX&gtm_auth=aBc1&gtm_preview=7")
    /// ```
    /// - Returns: `true` if the URL is a valid preview URL that this tag manager acts on; `false`, with a
    ///   warning, for anything else (a malformed URL, an exit URL for a container not in preview, no
    ///   preview source configured, an enter URL while ``run()`` is not running). The auth token is never logged.
    @discardableResult
    public func preview(url: String) -> Bool {
        let parsed: PreviewURL
        do throws(PreviewURLError) {
            parsed = try PreviewURL(parsing: url)
        } catch {
            logger.warning("invalid preview url", metadata: ["code": error.code.rawValue, "error": error.message])
            return false
        }
        switch parsed.action {
        case .exit:
            return exitPreview(id: parsed.containerID)
        case .enter(let request):
            guard lifecycleConfiguration.preview != nil else {
                logger.warning(
                    "preview url ignored: no preview source is configured",
                    metadata: ["container": parsed.containerID]
                )
                return false
            }
            let work = LifecycleWork { [self] in
                do throws(ContainerFetchError) {
                    _ = try await enterPreview(request)
                } catch {
                    logger.error(
                        "cannot preview",
                        metadata: [
                            "container": request.containerID, "code": error.code.rawValue, "error": error.message,
                        ]
                    )
                }
            }
            guard lifecycle.submit(work) else {
                logger.warning(
                    "preview url ignored: run() is not running (call enterPreview(_:))",
                    metadata: ["container": parsed.containerID]
                )
                return false
            }
            return true
        }
    }

    /// Handles a GTM preview URL given as a `URL`; see the `String` form.
    @discardableResult
    public func preview(url: URL) -> Bool { preview(url: url.absoluteString) }

    /// Fetches the draft `request` names and makes it the live version of its container ID until
    /// ``exitPreview(id:)``.
    /// - Returns: the draft container.
    /// - Throws: ``ContainerFetchError``: the source's error (``ContainerFetchError/isRefusal`` when the auth
    ///   token was refused), ``ContainerFetchError/Code/invalidContainer`` when the draft does not load, or
    ///   ``ContainerFetchError/Code/notConfigured`` without a preview source.
    @discardableResult
    public func enterPreview(_ request: PreviewRequest) async throws(ContainerFetchError) -> Container {
        let configuration = lifecycleConfiguration
        guard let source = configuration.preview else {
            throw ContainerFetchError(.notConfigured, "no preview source is configured")
        }
        let id = request.containerID
        guard ContainerLoader.isContainerID(id) else {
            throw ContainerFetchError(.invalidContainerID, "'\(id)' is not a container id (GTM-XXXX)")
        }
        logger.info("fetching the preview draft", metadata: ["container": id, "request": "\(request)"])
        let draft = try configuration.compile(try await source.fetchDraft(request), id: id, origin: "preview")
        LifecycleState.$publishing.withValue(true) {
            lifecycle.preview.withLock { preview in
                if let other = preview, other.containerID != id { restoreLive(other) }
                let live = preview?.containerID == id ? preview?.live : container(id: id)
                preview = LifecycleState.Preview(containerID: id, live: live, debug: request.debug)
                add(draft)
            }
        }
        lifecycle.deferral.replayIfDue(self)
        isDebugMode = request.debug
        logger.info(
            "previewing a draft",
            metadata: ["container": id, "version": draft.version, "debug": "\(request.debug)"]
        )
        return draft
    }

    /// Returns container `id` from its preview draft to its live version (or removes it, if it had none) and
    /// clears ``isDebugMode``.
    /// - Returns: `false`, with a warning, when `id` is not the container in preview.
    @discardableResult
    public func exitPreview(id: String) -> Bool {
        let exited = LifecycleState.$publishing.withValue(true) {
            lifecycle.preview.withLock { preview -> Bool in
                guard let current = preview, current.containerID == id else { return false }
                restoreLive(current)
                preview = nil
                return true
            }
        }
        lifecycle.deferral.replayIfDue(self)
        guard exited else {
            logger.warning("exit preview url ignored: the container is not in preview", metadata: ["container": id])
            return false
        }
        isDebugMode = false
        logger.info("left preview", metadata: ["container": id])
        return true
    }

    /// The ID of the container in preview, if any.
    public var previewContainerID: String? { lifecycle.preview.withLock { $0?.containerID } }

    private func restoreLive(_ preview: LifecycleState.Preview) {
        if let live = preview.live { add(live) } else { remove(id: preview.containerID) }
    }
}
