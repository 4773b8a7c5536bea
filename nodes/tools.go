package nodes

type toolsConfig struct {
	toolSource
}
