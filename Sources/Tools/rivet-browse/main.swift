import CommandLineKit
import OpenSSLKit
import RivetDiscovery
import ToolSpecs

// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

// SIGINT and SIGTERM are how a follow-mode browse ends: the cancelled body returns 0.
// Under --json a failure, usage errors included, is one JSON object on standard error.
ToolRunner.main(spec: ToolSpecs.rivetBrowse, jsonFailures: .everyFailure()) { arguments in
    let type = arguments[ToolSpecs.Browse.type]
    guard DNSSDServiceType.isValid(type) else {
        throw UsageError(
            "--type: '\(type)' is not a service type such as _rivet._tcp (_name._tcp or _name._udp, name 1 to 15 of a-z, 0-9 and -)",
            argument: type)
    }
    let showRejected = arguments[ToolSpecs.Browse.showRejected]
    let browser = try await browse(type)
    defer { browser.close() }
    if arguments[ToolSpecs.Browse.once] {
        return try await listOnce(browser, showRejected: showRejected)
    }
    return try await follow(browser, showRejected: showRejected)
}
