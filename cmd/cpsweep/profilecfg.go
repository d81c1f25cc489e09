package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/profiler/configsrv"
)

func profilerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiler",
		Short: "Serve profiler handler configurations to instrumented processes",
	}
	cmd.AddCommand(profilerServeCommand())
	return cmd
}

func profilerServeCommand() *cobra.Command {
	var file, listen string
	var tok cli.TokenFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "A configuration server: processes open and switch channels from it",
		Long: `Serves a handler configuration (the YAML of --profile) at
http://LISTEN` + configsrv.PathHandlers + `. Processes started with
"--profile http://LISTEN` + configsrv.PathHandlers + ` --profile-follow 1s" open their
channels from it and switch any channel whose entry changes, live. Change it by
editing --file, or with an HTTP PUT of new YAML (checked before it is stored;
a broken configuration is refused, and clients keep their handlers).`,
		Example: `  cpsweep profiler serve --file handlers.yaml --listen 0.0.0.0:9400 --token-file token
  curl -X PUT -H "Authorization: Bearer $(cat token)" --data-binary @buffered.yaml \
      http://cfg-host:9400` + configsrv.PathHandlers,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			token, err := tok.Server(listen)
			if err != nil {
				return err
			}
			if _, err := profiler.LoadHandlers(file); err != nil {
				return err
			}
			srv, err := configsrv.Serve(listen, token, file)
			if err != nil {
				return err
			}
			defer srv.Close()
			addr := srv.Addr()
			fmt.Fprintf(os.Stderr, "profiler configuration server ready: http://%s%s (from %s)\n", addr, configsrv.PathHandlers, file)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "handlers.yaml", "the handler configuration (YAML) to serve; PUTs are written back to it")
	f.StringVar(&listen, "listen", "127.0.0.1:9400", "HTTP address")
	tok.Register(f, "bearer token clients must send (required unless --listen is loopback)")
	return cmd
}
