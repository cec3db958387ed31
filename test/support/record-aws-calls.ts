import { installAwsCallRecorder } from './aws-calls';

// jest's setupFiles: each test file's AWS calls made as one of the stack's functions are recorded (aws-calls.ts).
installAwsCallRecorder();
