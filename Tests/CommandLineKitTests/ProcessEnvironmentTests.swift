import CommandLineKit
import Foundation
import Testing

@Suite struct ProcessEnvironmentTests {
    @Test func theProcessEnvironmentIsReadAsProcessInfoReadsIt() {
        let name = "COMMANDLINEKIT_TEST_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        setenv(name, "a=b c", 1)
        defer { unsetenv(name) }
        let environment = ProcessEnvironment.current()
        #expect(environment[name] == "a=b c")
        #expect(environment == ProcessInfo.processInfo.environment)
    }

    @Test func oneVariableIsReadByName() {
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
