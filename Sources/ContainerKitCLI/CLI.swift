import ContainerKit
import ContainerKitLint
public import Foundation

/// The `containerkit` command line, as a library so it can be tested without a process.
public enum CLI {
    static let usage = """
        usage: containerkit <command> [options]

        commands:
          run       run a container over data-layer pushes and show what fires
          lint      check container files for mistakes without running them
          diff      show what a new container version changes, structurally and on recorded pushes
          preview   load the draft a GTM preview URL names and trace pushes against it
          help      show this help

        Run 'containerkit <command> --help' for a command's options.
        """

    /// Runs the command line `arguments` (without the program name) and returns the exit code.
    public static func main(
        _ arguments: [String],
        output: CommandOutput = .standard,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> Int32 {
        let code = await command(arguments, output: output, environment: environment)
        // A report that could not be written whole is no success, whatever the command found.
        guard let failure = output.outputFailure else { return code }
        output.error("containerkit: the output could not be written: \(failure)")
        return code == ExitCode.success ? ExitCode.failure : code
    }

    private static func command(
        _ arguments: [String],
        output: CommandOutput,
        environment: [String: String]
    ) async -> Int32 {
        guard let command = arguments.first else {
            output.error(usage)
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        let wantsHelp = rest.contains("--help") || rest.contains("-h")
        switch command {
        case "run":
            if wantsHelp {
                output.print(RunCommand.usage)
                return ExitCode.success
            }
            return await RunCommand.run(rest, output: output, environment: environment)
        case "lint":
            if wantsHelp {
                output.print(LintCommand.usage)
                return ExitCode.success
            }
            return await LintCommand.run(rest, output: output)
        case "diff":
            if wantsHelp {
                output.print(DiffCommand.usage)
                return ExitCode.success
            }
            return await DiffCommand.run(rest, output: output)
        case "preview":
            if wantsHelp {
                output.print(PreviewCommand.usage)
                return ExitCode.success
            }
            return await PreviewCommand.run(rest, output: output)
        case "help", "--help", "-h":
            output.print(usage)
            return ExitCode.success
        case "--version":
            output.print("containerkit \(ContainerKitVersion.version)")
            return ExitCode.success
        default:
            output.error("containerkit: unknown command '\(command)'\n\n\(usage)")
            return ExitCode.usage
        }
    }
}
