import CommandLineKit
import Foundation
import Testing

/// Each test changes its environment in a child process of its own (an exit test): setenv in the
/// test runner itself, while other tests start processes (which copy the environment) in
/// parallel, crashed a parallel `swift test` run in Foundation's Process.run (memcpy of an
/// environment string freed meanwhile). One test at a time, as every suite of exit tests.
@Suite(.serialized) struct ProcessEnvironmentTests {
    @Test func theProcessEnvironmentIsReadAsProcessInfoReadsIt() async {
        await #expect(processExitsWith: .success) {
            let name = "COMMANDLINEKIT_TEST_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
            setenv(name, "a=b c", 1)
            defer { unsetenv(name) }
            let environment = ProcessEnvironment.current()
            #expect(environment[name] == "a=b c")
            #expect(environment == ProcessInfo.processInfo.environment)
        }
    }

    @Test func oneVariableIsReadByName() async {
        await #expect(processExitsWith: .success) {
            let name = "COMMANDLINEKIT_ONE_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
            #expect(ProcessEnvironment.value(name) == nil)
            setenv(name, "", 1)
            #expect(ProcessEnvironment.value(name) == "")
            setenv(name, "a=b", 1)
            #expect(ProcessEnvironment.value(name) == "a=b")
            unsetenv(name)
            #expect(ProcessEnvironment.value(name) == nil)
        }
    }
}
