import CommandLineKit
import OpenSSLKit
import RastrilloHTTP
import RastrilloCLI
import ToolSpecs

// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

// One request, run on the main thread from start to end: the body's task on the calling-thread
// executor and the transfer on the thread awaiting it, so no pool, signal or transfer thread
// starts (bench/fetch measures the start-up this saves). SIGINT and SIGTERM still stop it: the
// transfer also waits on ToolRunner's interrupt descriptor.
ToolRunner.main(
    spec: ToolSpecs.rastrilloFetch, executor: .callingThread, jsonFailures: .usageErrors(FailureReport.jsonLine)
) { arguments in
    let json = arguments[ToolSpecs.Fetch.json]
    return try await FailureReport.reporting(json: json) {
        let client = try ClientArguments(arguments, url: arguments[ToolSpecs.Fetch.url])
        client.announceProxy(json: json)
        let body = try RequestBodyFile(arguments[ToolSpecs.Fetch.bodyFile]) ?? RequestBodyFile(data: arguments[ToolSpecs.Fetch.data])
        defer { body?.close() }
        let request = NativeRequest(
            method: arguments[ToolSpecs.Fetch.method] ?? (body == nil ? "GET" : "POST"), client.target,
            headers: client.headers, body: body?.body,
            maxBytes: arguments[ToolSpecs.Fetch.maxBytes],
            timeout: arguments[ToolSpecs.HTTP.timeout].map { .seconds($0) })
        let http = client.client(interruptDescriptor: ToolRunner.interruptDescriptor)
        let response = try await http.responseDetails(request)
        if arguments[ToolSpecs.Fetch.fail] && !response.isSuccess {
            // As curl -f: nothing on stdout, so `rastrillo-fetch -f URL | jq` sees only a success.
        } else if json {
            try ResponseJSON.write(response)
        } else {
            try TerminalGuard.check(response.body, status: response.status, allowed: arguments[ToolSpecs.Fetch.binaryToTerminal])
            try StandardOutput.write(response.body)
        }
        if let error = response.error { return FailureReport.emit(error, json: json) }
        return .ok
    }
}
