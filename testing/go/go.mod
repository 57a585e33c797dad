module agent-bridge/testing/go

go 1.19
