package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/deploy"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/sweep"
)

func deployCommand(code *int) *cobra.Command {
	cmd := &cobra.Command{Use: "deploy", Short: "Write what runs a sweep on a cluster (cpsweep deploy kubernetes)"}
	cmd.AddCommand(kubernetesCommand(code))
	return cmd
}

// topologyFlags are the flags a --topology file replaces.
var topologyFlags = []string{"name", "namespace", "image", "pull-policy", "cluster-domain", "sender-count", "receiver-count", "sender-cpus", "receiver-cpus", "sweep-cpus",
	"sender-memory", "receiver-memory", "sweep-memory", "sender-node-selector", "receiver-node-selector", "sweep-node-selector", "lanes", "anti-affinity", "sut-selector", "host-network", "runs-size", "hold", "job-input", "job-output"}

// reservedSweepFlags are set by the manifests themselves (--plan too: its
// file is on this machine, not in the pod; the flags go after -- instead).
var reservedSweepFlags = []string{"plan", "sender", "receiver", "senders-from", "receivers-from", "sender-count", "receiver-count", "token", "token-file", "results", "profile", "dns-server", "local-senders", "input", "output"}

func kubernetesCommand(code *int) *cobra.Command {
	t := deploy.Default()
	var out, secretOut, topologyFile, tokenFile, profileFile string
	var force bool
	cmd := &cobra.Command{
		Use:   "kubernetes [flags] [-- sweep flags]",
		Short: "Write Kubernetes manifests: agents as StatefulSets, the token as a Secret, the sweep as a Job",
		Long: `Writes the manifests of a sweep's topology into --out (one file per step;
kubectl apply -f DIR). Sender and receiver agents run as StatefulSets behind
headless Services, which the sweep's Job finds by DNS (--senders-from). The
token is generated into a Secret (mode 0600 on disk, written apart from the
manifests into --secret-out, outside the working tree; never in an argument
or a ConfigMap) unless --token-file gives one. Every pod has Guaranteed QoS
(requests = limits, whole CPUs) so that the kubelet's static CPU manager can
pin the emission threads. Senders, receivers and the system under test
(--sut-selector) are kept on different nodes (--anti-affinity). The Job runs
cpsweep with the flags after --, writes the run directory on a volume, and
waits --hold for kubectl cp. docs/kubernetes.md has the whole walk.
The Helm chart deploy/helm/cloudprofiler renders the same objects.`,
		Example: `  # two sender pods of 3 CPUs, one receiver of 4 with 2 lanes, the broker's pods elsewhere
  cpsweep deploy kubernetes --image registry.example.com/cp:1 --sender-count 2 --sender-cpus 3 --receiver-cpus 4 --lanes 2 \
    --sut-selector app=nats --out k8s -- --duration 3s --bucket 100 --threads 2 --clock
  kubectl apply -f k8s

  # the same from a topology file (fields as in docs/kubernetes.md)
  cpsweep deploy kubernetes --topology topology.yaml --out k8s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			*code = sweep.ExitInvalidPlan
			if err := readTopology(cmd.Flags(), &t, topologyFile); err != nil {
				return err
			}
			if len(args) > 0 {
				t.SweepArgs = args
			}
			plan, err := checkSweepArgs(t.SweepArgs)
			if err != nil {
				return err
			}
			for _, w := range deploy.SizeWarnings(t, plan.Threads) {
				fmt.Fprintln(os.Stderr, "cpsweep deploy: warning:", w)
			}
			token, handlers, err := deploySecrets(tokenFile, profileFile)
			if err != nil {
				return err
			}
			files, err := deploy.Render(t, token, handlers)
			if err != nil {
				return err
			}
			secretFile, err := writeDeploy(t, out, secretOut, files, force)
			if err != nil {
				*code = sweep.ExitError
				return err
			}
			*code = sweep.ExitAnswer
			fmt.Print(deploy.NextSteps(t, out, secretFile))
			return nil
		},
	}
	registerDeploy(cmd.Flags(), &t, &deployFiles{&out, &secretOut, &topologyFile, &tokenFile, &profileFile, &force})
	return cmd
}

// writeDeploy writes the manifests into out and the Secret's apart, into
// secretOut (default: deploy.DefaultSecretDir, a private folder outside
// the working tree); it says what it wrote and returns the Secret's path.
func writeDeploy(t deploy.Topology, out, secretOut string, files []deploy.File, force bool) (string, error) {
	secret, rest := deploy.SplitSecret(files)
	if secretOut == "" {
		dir, err := deploy.DefaultSecretDir(t, out)
		if err != nil {
			return "", err
		}
		secretOut = dir
	}
	if err := os.MkdirAll(secretOut, 0o700); err != nil {
		return "", fmt.Errorf("--secret-out: %w", err)
	}
	if err := deploy.Write(secretOut, secret, force); err != nil {
		return "", err
	}
	if err := deploy.Write(out, rest, force); err != nil {
		return "", err
	}
	secretFile := ""
	for _, f := range secret {
		secretFile = filepath.Join(secretOut, f.Name)
		fmt.Printf("wrote %s (the token; mode 0600, outside the manifests' folder)\n", secretFile)
	}
	for _, f := range rest {
		fmt.Printf("wrote %s/%s\n", out, f.Name)
	}
	return secretFile, nil
}

// deployFiles are the flags that name files, not the topology.
type deployFiles struct {
	out, secretOut, topology, token, profile *string
	force                                    *bool
}

func registerDeploy(f *pflag.FlagSet, t *deploy.Topology, d *deployFiles) {
	f.StringVarP(d.out, "out", "o", "k8s", "write the manifests into this folder")
	f.StringVar(d.secretOut, "secret-out", "", "write the token's Secret here, apart from the manifests (default: ~/.config/cp/deploy/NAMESPACE-NAME-HASH, one for each --out, mode 0700:\nnever the working tree, so that no git add commits the token)")
	f.BoolVar(d.force, "force", false, "replace manifests already in --out and the Secret in --secret-out (a new token)")
	f.StringVar(d.topology, "topology", "", "read the topology from this YAML file instead of the flags below (docs/kubernetes.md)")
	f.StringVar(d.token, "token-file", "", "the agents' token (default: a new random one, written only into the Secret)")
	f.StringVar(d.profile, "profile", "", "the profiler's handlers (YAML): a ConfigMap, and the sweep profiles one trial with them")
	f.StringVar(&t.Name, "name", t.Name, "prefix of every object's name")
	f.StringVar(&t.Namespace, "namespace", t.Namespace, "namespace the manifests create and use")
	f.StringVar(&t.Image, "image", t.Image, "image holding dgsend, dgrecv and cpsweep (make image)")
	f.StringVar(&t.PullPolicy, "pull-policy", t.PullPolicy, "IfNotPresent, Always or Never")
	f.StringVar(&t.ClusterDomain, "cluster-domain", t.ClusterDomain, "the cluster's DNS domain (the Services' FQDNs)")
	f.IntVar(&t.Senders.Count, "sender-count", t.Senders.Count, "sender agents (pods)")
	f.IntVar(&t.Receivers.Count, "receiver-count", t.Receivers.Count, "receiver agents (pods)")
	f.IntVar(&t.Senders.CPUs, "sender-cpus", t.Senders.CPUs, "whole CPUs per sender pod (requests = limits)")
	f.IntVar(&t.Receivers.CPUs, "receiver-cpus", t.Receivers.CPUs, "whole CPUs per receiver pod")
	f.IntVar(&t.Sweep.CPUs, "sweep-cpus", t.Sweep.CPUs, "whole CPUs of the sweep's pod")
	f.StringVar(&t.Senders.Memory, "sender-memory", t.Senders.Memory, "memory per sender pod")
	f.StringVar(&t.Receivers.Memory, "receiver-memory", t.Receivers.Memory, "memory per receiver pod")
	f.StringVar(&t.Sweep.Memory, "sweep-memory", t.Sweep.Memory, "memory of the sweep's pod")
	f.Var(&t.Senders.NodeSelector, "sender-node-selector", "sender pods only on nodes with these labels (k=v,k2=v2)")
	f.Var(&t.Receivers.NodeSelector, "receiver-node-selector", "receiver pods only on nodes with these labels")
	f.Var(&t.Sweep.NodeSelector, "sweep-node-selector", "the sweep's pod only on nodes with these labels")
	f.Var(&t.SUTSelector, "sut-selector", "labels of the system under test's pods (any namespace): the agents keep off their nodes")
	f.IntVar(&t.Lanes, "lanes", t.Lanes, "lanes per receiver agent")
	f.StringVar(&t.AntiAffinity, "anti-affinity", t.AntiAffinity, "required: senders, receivers and the system under test never share a node (pods wait for enough nodes); preferred: apart when the scheduler can")
	f.BoolVar(&t.HostNetwork, "host-network", false, "agents on the nodes' network (no pod overlay in the path or the clock probes; ports must be free on the nodes; docs/kubernetes.md)")
	f.StringVar(&t.JobInput, "job-input", "", "a stream processor in the path (docs/sut.md): its input, a broker URL naming its group (kafka://HOST:PORT/TOPIC?group=NAME);\nthe senders publish into it, the receiver reads the job's lag on it, and the sweep gets --input")
	f.StringVar(&t.JobOutput, "job-output", "", "with --job-input: the job's output, a broker URL: the receiver reads it (in the group cp unless it names one), and the sweep gets --output")
	f.StringVar(&t.RunsSize, "runs-size", t.RunsSize, "size of the run directory's volume")
	f.DurationVar(&t.Hold, "hold", t.Hold, "the sweep's pod waits this long after the sweep, so that kubectl cp can copy the runs out")
}

// readTopology reads --topology into t; the flags, written into t as
// they were parsed, may not be given with it.
func readTopology(f *pflag.FlagSet, t *deploy.Topology, file string) error {
	if file == "" {
		return nil // the flags wrote it
	}
	for _, name := range topologyFlags {
		if f.Changed(name) {
			return fmt.Errorf("--%s and --topology: give the topology in the file or as flags, not both", name)
		}
	}
	b, err := readfile.Limited(file, 1<<20)
	if err != nil {
		return fmt.Errorf("read topology: %w", err)
	}
	if *t, err = deploy.ParseTopology(b); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// checkSweepArgs parses the Job's cpsweep flags as cpsweep will, so a typo
// is refused here rather than in a pod; the flags the manifests set are
// refused too (the token above all: never in an argument).
func checkSweepArgs(args []string) (sweep.TrialPlan, error) {
	if err := cli.RefuseCredentials(pflag.NewFlagSet("", pflag.ContinueOnError), args); err != nil {
		return sweep.TrialPlan{}, fmt.Errorf("the topology's sweep arguments: %w", err)
	}
	o, _, set, err := parseSweepFlags(args, reservedSweepFlags)
	if err != nil {
		return o.plan, err
	}
	if len(set) > 0 {
		return o.plan, fmt.Errorf("sweep flags after --: %s are set by the manifests (the token comes from the Secret; use --token-file, --profile, --job-input and --job-output of deploy kubernetes)", strings.Join(set, ", "))
	}
	return o.plan, nil
}

// parseSweepFlags parses args (after --) as cpsweep parses its own flags,
// so that a typo is refused before anything starts, and returns the
// options and flags it set and which of reserved were given.
func parseSweepFlags(args, reserved []string) (*options, *pflag.FlagSet, []string, error) {
	o := new(options)
	fs := pflag.NewFlagSet("cpsweep", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return o, fs, nil, fmt.Errorf("sweep flags after --: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fs, nil, fmt.Errorf("sweep flags after --: %q is not a flag", fs.Arg(0))
	}
	var set []string
	for _, name := range reserved {
		if fs.Changed(name) {
			set = append(set, "--"+name)
		}
	}
	return o, fs, set, nil
}

// deploySecrets reads or makes the token, and reads the handlers file.
func deploySecrets(tokenFile, profileFile string) (string, []byte, error) {
	var token string
	var err error
	if tokenFile != "" {
		tf := cli.TokenFlags{File: tokenFile}
		if token, err = tf.Read(); err != nil {
			return "", nil, err
		}
	} else if token, err = deploy.NewToken(); err != nil {
		return "", nil, err
	}
	if profileFile == "" {
		return token, nil, nil
	}
	handlers, err := readfile.Limited(profileFile, 1<<20)
	if err != nil {
		return "", nil, fmt.Errorf("read --profile: %w", err)
	}
	if len(handlers) == 0 {
		return "", nil, errors.New("--profile: the handlers file is empty")
	}
	return token, handlers, nil
}
