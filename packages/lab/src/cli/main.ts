#!/usr/bin/env node
// kube-proxy-ts-lab: the lab's command line (`kube-proxy-ts lab …` runs it; see the agent's cli/plugin.ts).
import { runMain } from 'kube-proxy-ts/cli/process-main.js';
import { labCommand } from './lab.js';

runMain('kube-proxy-ts lab', labCommand);
