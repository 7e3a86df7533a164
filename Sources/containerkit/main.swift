import ContainerKitCLI
import Foundation

let code = await CLI.main(Array(CommandLine.arguments.dropFirst()))
exit(code)
