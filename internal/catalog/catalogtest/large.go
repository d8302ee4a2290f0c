package catalogtest

import (
	"encoding/json"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
)

// The shape of Large's catalog apart from its services.
const (
	largeProviders = 3
	largeHardware  = 6
	largeImages    = 4
	largePartials  = 2
	largeTemplates = 5
)

// LargeEntities is the number of entities Large(LargeServices, mark) holds:
// 500, the size issue 14 asks heddle to import in one document.
const (
	LargeServices = 480
	LargeEntities = largeProviders + largeHardware + largeImages + LargeServices + largePartials + largeTemplates
)

// stackNames are the families services are grouped in, as a company's or a
// Hadoop distribution's catalog groups them.
var stackNames = []string{"hdfs", "yarn", "hive", "hbase", "kafka", "spark", "zk", "web", "db", "mq", "obs", "auth"}

// Large returns a catalog document (JSON, apiVersion heddle/v1) shaped like
// a real one: three local providers, six hardware types, four image types,
// services (at least 12) in twelve stacks, where each service requires one or
// two earlier services of its stack at runtime, uses one of the stack before
// at install, and some provide or conflict; two partial templates (one
// immutable) and five cluster templates that extend and include them, each
// offering two or three stacks. Every service has shell actions of a few
// hundred bytes. mark goes into every description, so that tests can tell
// two imports of the same catalog apart.
func Large(services int, mark string) []byte {
	services = max(services, len(stackNames))
	doc := map[string]any{"apiVersion": "heddle/v1"}
	desc := func(what string) string { return what + " (" + mark + ")" }

	var providers []*domain.Provider
	var providerNames []string
	for i := range largeProviders {
		name := fmt.Sprintf("local-%c", 'a'+i)
		providerNames = append(providerNames, name)
		providers = append(providers, &domain.Provider{Meta: domain.Meta{Name: name, Description: desc("nodes on this machine, zone " + name)}, ProviderType: "local"})
	}
	var hardware []*domain.HardwareType
	hwNames := []string{"small", "medium", "large", "xlarge", "storage", "gpu"}
	for _, hw := range hwNames[:largeHardware] {
		pm := map[string]domain.HardwareFlavor{}
		for _, p := range providerNames {
			pm[p] = domain.HardwareFlavor{Flavor: "small"}
		}
		hardware = append(hardware, &domain.HardwareType{Meta: domain.Meta{Name: hw, Description: desc(hw + " machines")}, ProviderMap: pm})
	}
	var images []*domain.ImageType
	imageNames := []string{"debian-12", "ubuntu-24.04", "rocky-9", "alpine-3"}
	for _, im := range imageNames[:largeImages] {
		pm := map[string]domain.ImageRef{}
		for _, p := range providerNames {
			pm[p] = domain.ImageRef{Image: "host"}
		}
		images = append(images, &domain.ImageType{Meta: domain.Meta{Name: im, Description: desc(im + " image")}, ProviderMap: pm})
	}

	// Services, round robin over the stacks: service j of stack s is
	// "<stack>-<j>"; it requires the stack's first service and the one
	// before it, and uses the one two before it at install.
	stacks := make([][]string, len(stackNames))
	var svcs []*domain.Service
	for i := range services {
		s := i % len(stackNames)
		j := len(stacks[s])
		name := fmt.Sprintf("%s-%03d", stackNames[s], j)
		svc := &domain.Service{Meta: domain.Meta{Name: name, Description: desc(fmt.Sprintf("%s component %d", stackNames[s], j))}}
		if j > 0 {
			svc.Dependencies.Runtime.Requires = append(svc.Dependencies.Runtime.Requires, stacks[s][j-1])
			if j > 1 {
				svc.Dependencies.Runtime.Requires = append(svc.Dependencies.Runtime.Requires, stacks[s][0])
				svc.Dependencies.Install.Uses = []string{stacks[s][j-2]}
			}
		}
		if j%10 == 0 {
			svc.Dependencies.Provides = []string{fmt.Sprintf("%s-api-%d", stackNames[s], j/10)}
		}
		if j%25 == 7 {
			svc.Dependencies.Conflicts = []string{fmt.Sprintf("%s-legacy", stackNames[s])}
		}
		svc.Actions = map[domain.Action]domain.ServiceAction{
			domain.ActionInstall: {Type: "shell", Fields: map[string]string{"script": fmt.Sprintf(
				"mkdir -p \"$HOME/%[1]s\" && cd \"$HOME/%[1]s\"\n# fetch and unpack %[1]s\necho installed > state\n", name)}},
			domain.ActionConfigure: {Type: "shell", Fields: map[string]string{"script": fmt.Sprintf(
				"cd \"$HOME/%[1]s\" && echo \"cluster=%%cluster.id%% kv=%%ip.service.%[1]s%%\" > %[1]s.conf\n", name)}},
			domain.ActionStart: {Type: "shell", Timeout: domain.Duration(30e9), Fields: map[string]string{"script": fmt.Sprintf(
				"cd \"$HOME/%[1]s\" && echo running > state\n", name)}},
			domain.ActionStop: {Type: "shell", Timeout: domain.Duration(30e9), Fields: map[string]string{"script": fmt.Sprintf(
				"cd \"$HOME/%[1]s\" 2>/dev/null || exit 0\necho stopped > state\n", name)}},
			domain.ActionRemove: {Type: "shell", Fields: map[string]string{"script": fmt.Sprintf("rm -rf \"$HOME/%s\"", name)}},
		}
		stacks[s] = append(stacks[s], name)
		svcs = append(svcs, svc)
	}

	partials := []*domain.PartialTemplate{
		{Meta: domain.Meta{Name: "base", Description: desc("provider, sizes and lease every cluster shares")}, Immutable: true,
			TemplateSections: domain.TemplateSections{
				Defaults:       domain.Defaults{Provider: providerNames[0], HardwareType: "medium", ImageType: "debian-12"},
				Administration: domain.Administration{Lease: domain.LeasePolicy{Initial: domain.Duration(24 * 3600e9), Max: domain.Duration(7 * 24 * 3600e9), Step: domain.Duration(24 * 3600e9)}},
			}},
		{Meta: domain.Meta{Name: "observability", Description: desc("monitoring on every cluster")},
			TemplateSections: domain.TemplateSections{
				Compatibility: domain.Compatibility{Services: stacks[10]},
				Defaults:      domain.Defaults{Services: stacks[10][:1]},
			}},
	}
	var templates []*domain.ClusterTemplate
	for t := range largeTemplates {
		var compat []string
		var defaults []string
		for k := range 2 + t%2 {
			st := stacks[(t*2+k)%10]
			compat = append(compat, st...)
			defaults = append(defaults, st[:min(3, len(st))]...)
		}
		first := stacks[(t*2)%10][0]
		templates = append(templates, &domain.ClusterTemplate{
			Meta: domain.Meta{Name: fmt.Sprintf("platform-%d", t), Description: desc("a platform of several stacks")},
			TemplateSections: domain.TemplateSections{
				Extends:       &domain.TemplateRef{Name: "base"},
				Includes:      []domain.TemplateRef{{Name: "observability"}},
				Compatibility: domain.Compatibility{Services: compat, HardwareTypes: hwNames[:largeHardware], ImageTypes: imageNames[:largeImages]},
				Defaults:      domain.Defaults{Services: defaults},
				Constraints: domain.Constraints{
					Size:     domain.SizeConstraint{Min: 1, Max: 1000},
					Services: map[string]domain.ServiceConstraint{first: {Quantities: domain.Quantity{Min: 1, Max: 3}}},
				},
			}})
	}
	doc["providers"] = providers
	doc["hardwareTypes"] = hardware
	doc["imageTypes"] = images
	doc["services"] = svcs
	doc["partialTemplates"] = partials
	doc["clusterTemplates"] = templates
	out, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("catalogtest: encoding the catalog: %v", err)) // only domain types: cannot fail
	}
	return out
}
