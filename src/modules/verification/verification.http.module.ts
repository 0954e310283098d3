import { Module } from '@nestjs/common';
import { VerificationController } from './verification.controller';
import { VerificationModule } from './verification.module';

/** The api's verification routes: `/api/v1/verification/*` and the identity providers' callbacks. */
@Module({ imports: [VerificationModule], controllers: [VerificationController] })
export class VerificationHttpModule {}
