import Foundation
import Logging
import Metrics
import TagServiceCore

#if canImport(Glibc)
    import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let parsed: TagServiceConfiguration.Parsed
do {
    parsed = try TagServiceConfiguration.parse(arguments, environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("TagService: \(error)\n".utf8))
    exit(64)
}
guard case .run(let configuration) = parsed else {
    print(TagServiceConfiguration.help)
    exit(0)
}

// Every line is made safe before it is written: control characters escaped, the Braze key, the write keys, the
// metrics token and URL passwords redacted, repeated warnings and errors counted instead of written (see
// SafeLogHandler).
LoggingSystem.bootstrap { label in
    var handler = SafeLogHandler(
        wrapping: StreamLogHandler.standardError(label: label),
        secrets: [configuration.brazeAPIKey, configuration.metricsToken, configuration.debug.token].compactMap { $0 }
            + configuration.writeKeys
    )
    handler.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
    return handler
}
let logger = Logger(label: "TagService")

do {
    let service = try await TagServiceApplication(configuration: configuration, logger: logger) { port in
        logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
    }
    MetricsSystem.bootstrap(service.metricsFactory)
    try await service.runService()
    logger.info("stopped")
} catch {
    logger.critical("cannot run", metadata: ["error": "\(error)"])
    exit(1)
}
