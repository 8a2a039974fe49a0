module github.com/fediversity/podroles

go 1.24.0

require (
	github.com/spf13/cobra v1.10.2
	github.com/tidwall/gjson v1.20.2
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
)
